select n_name, r_name, count(*) from customer join nation on c_nationkey = n_nationkey join region on n_regionkey = r_regionkey where c_acctbal between 1000 and 1100 group by 1, 2 order by 3 desc, 1
