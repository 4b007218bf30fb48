select max(o_totalprice) from orders where o_custkey = 7777
