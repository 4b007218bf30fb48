select o_orderdate, sum(o_totalprice) over (order by o_orderdate rows 6 preceding) from (select o_orderdate, sum(o_totalprice) o_totalprice from orders group by 1) d order by 1 limit 30
