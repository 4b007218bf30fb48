select count(*) from orders where o_orderkey % 100 = 0
