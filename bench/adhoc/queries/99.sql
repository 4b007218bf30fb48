select o_orderkey, ntile(4) over (order by o_totalprice, o_orderkey) from orders where o_orderdate = date '1994-05-05' order by 1
