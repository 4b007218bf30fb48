select o_orderpriority, percentile_disc(0.9) within group (order by o_totalprice), max(o_orderdate), min(o_clerk) from orders where o_orderstatus = 'O' group by 1 order by 1
