select count(*) from orders where o_totalprice::int % 7 = 0
