select extract(year from o_orderdate), count(*) from orders group by 1
