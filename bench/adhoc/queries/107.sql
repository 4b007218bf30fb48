select sum(l_quantity) from lineitem where l_orderkey in (select o_orderkey from orders where o_custkey = 1234)
