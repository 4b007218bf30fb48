select l_suppkey, count(*) from lineitem where l_shipdate >= date '1997-01-01' group by 1 order by 2 desc, 1 limit 10
