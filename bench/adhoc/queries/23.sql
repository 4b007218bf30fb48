select c_nationkey, count(*) from customer c where not exists (select 1 from orders o where o.o_custkey=c.c_custkey) group by 1
