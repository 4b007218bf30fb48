select l_partkey, count(*) from lineitem where l_shipdate = date '1996-03-13' group by 1 order by 2 desc, 1 limit 5
