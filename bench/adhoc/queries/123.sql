select ps_partkey, ps_suppkey from partsupp where ps_supplycost < 1.5 order by 1, 2
