select * from orders where o_orderkey = 123456
