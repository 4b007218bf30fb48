select o_custkey, sum(o_totalprice) from orders where o_custkey between 1000 and 1100 group by 1 order by 1
