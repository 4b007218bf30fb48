select count(distinct l_partkey), count(distinct l_suppkey) from lineitem where l_receiptdate > l_commitdate and l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-02-01'
