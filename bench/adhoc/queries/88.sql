select c_nationkey, max(c_acctbal) - min(c_acctbal) from customer group by 1 order by 1
