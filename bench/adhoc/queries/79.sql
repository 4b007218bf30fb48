select a.c_nationkey, count(*) from customer a where a.c_custkey < 1500 and a.c_acctbal > (select avg(b.c_acctbal) from customer b where b.c_nationkey = a.c_nationkey) group by 1 order by 1
