select ps_partkey, count(*) from partsupp where ps_partkey between 1000 and 5000 group by 1 having count(*) > 3 order by 1
