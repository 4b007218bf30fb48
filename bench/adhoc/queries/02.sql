select l_returnflag, avg(l_quantity) from lineitem where l_shipdate > date '1998-01-01' group by 1
