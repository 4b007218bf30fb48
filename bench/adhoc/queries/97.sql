select c_name from customer where c_custkey in (select o_custkey from orders group by o_custkey having count(*) > 35) order by 1
