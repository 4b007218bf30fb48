select c_mktsegment, count(*) from customer where c_custkey in (select o_custkey from orders where o_orderdate > date '1998-07-01') group by 1 order by 1
