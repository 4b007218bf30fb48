select count(*) from orders o1 join orders o2 on o1.o_custkey = o2.o_custkey and o1.o_orderkey < o2.o_orderkey where o1.o_orderdate = date '1995-05-05'
