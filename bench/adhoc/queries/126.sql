select o_orderpriority, count(distinct o_custkey) from orders where o_orderdate >= date '1996-01-01' group by 1 order by 1
