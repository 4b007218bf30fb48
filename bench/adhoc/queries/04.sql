select count(*) from orders o where exists (select 1 from lineitem l where l.l_orderkey = o.o_orderkey and l_quantity > 49)
