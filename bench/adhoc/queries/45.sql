select l_returnflag, l_shipmode, count(*), sum(l_quantity) from lineitem where l_shipdate >= date '1997-01-01' group by cube(l_returnflag, l_shipmode) order by 1, 2
