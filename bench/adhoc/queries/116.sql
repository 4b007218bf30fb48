select r_name, sum(s_acctbal) from region join nation on n_regionkey = r_regionkey join supplier on s_nationkey = n_nationkey group by 1 order by 1
