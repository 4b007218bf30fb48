select c_nationkey, count(*) from customer where c_custkey in (select o_custkey from orders where o_totalprice > 450000) group by 1 order by 1
