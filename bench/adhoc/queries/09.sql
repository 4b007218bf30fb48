select c_custkey, x.s from customer, lateral (select sum(o_totalprice) s from orders where o_custkey = c_custkey) x where c_nationkey = 3 order by 1 limit 100
