select l_returnflag, l_linestatus, count(*) from lineitem group by rollup(1, 2) order by 1, 2
