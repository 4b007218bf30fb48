select count(*) from orders where o_orderstatus = 'F' and o_totalprice between 100000 and 100500
