select count(*) from customer c left join orders o on o.o_custkey = c.c_custkey and o.o_orderstatus = 'F' where o.o_orderkey is null
