select l_returnflag, percentile_cont(0.5) within group (order by l_extendedprice) from lineitem where l_shipdate >= date '1998-09-01' group by 1 order by 1
