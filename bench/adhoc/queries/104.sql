select extract(quarter from l_shipdate) q, sum(l_quantity) from lineitem where l_shipdate >= date '1996-01-01' and l_shipdate < date '1997-01-01' group by 1 order by 1
