select n_name, count(*) from nation, supplier s where s_nationkey = n_nationkey and s_acctbal > (select avg(s_acctbal) from supplier s2 where s2.s_nationkey = s.s_nationkey) group by 1 order by 1
