select date_trunc('month', o_orderdate) m, sum(o_totalprice) from orders group by 1 order by 1
