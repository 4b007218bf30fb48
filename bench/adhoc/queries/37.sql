select o_orderstatus, percentile_cont(0.5) within group (order by o_totalprice) from orders group by 1 order by 1
