with big as (select o_custkey, sum(o_totalprice) s from orders group by 1) select count(*) from big where s > 1000000
