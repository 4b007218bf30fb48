select o_orderpriority, count(*) from orders where o_totalprice > 400000 group by 1
