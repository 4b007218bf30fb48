select ps_suppkey, count(*), sum(ps_supplycost * ps_availqty) from partsupp where ps_availqty < 100 group by 1 having count(*) > 3 order by 3 desc limit 10
