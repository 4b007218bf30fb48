select l_orderkey, max(l_shipdate) from lineitem where l_orderkey between 100000 and 200000 group by 1 order by 1 limit 20
