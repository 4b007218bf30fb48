select s_nationkey, count(*) from supplier group by 1 order by 1
