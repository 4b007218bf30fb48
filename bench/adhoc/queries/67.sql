select distinct c_nationkey, c_mktsegment from customer join orders on o_custkey = c_custkey where o_totalprice > 500000 order by 1, 2
