select c_nationkey, extract(year from o_orderdate), sum(o_totalprice) from customer join orders on o_custkey = c_custkey group by 1, 2
