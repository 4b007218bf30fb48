select count(*) from (select o_custkey, rank() over (partition by o_custkey order by o_totalprice) from orders where o_custkey < 1000) s
