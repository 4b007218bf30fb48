select count(*) from lineitem where l_orderkey between 1000 and 50000
