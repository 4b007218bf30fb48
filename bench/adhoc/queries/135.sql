select count(*) from (select l_orderkey, l_partkey from lineitem where l_quantity = 50 group by 1, 2) x
