select l_shipmode, sum(l_extendedprice) from lineitem join orders on l_orderkey=o_orderkey where o_orderdate between date '1995-01-01' and date '1995-03-31' group by 1
