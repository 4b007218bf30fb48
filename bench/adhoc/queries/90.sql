select l_orderkey, sum(l_quantity) from lineitem group by 1 having sum(l_quantity) > 300 order by 2 desc, 1 limit 10
