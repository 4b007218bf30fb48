select o_orderdate, count(*) from orders where o_orderdate >= date '1998-06-01' group by 1 order by 1
