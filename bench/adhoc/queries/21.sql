select ps_partkey, sum(ps_availqty) from partsupp group by 1 order by 2 desc, 1 limit 5
