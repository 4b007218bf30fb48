select avg(o_totalprice) filter (where o_orderpriority like '1%'), avg(o_totalprice) filter (where o_orderpriority like '5%') from orders
