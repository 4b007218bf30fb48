select count(*), sum(l_quantity) from lineitem where l_shipdate between date '1995-06-01' and date '1995-06-30'
