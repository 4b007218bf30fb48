select c_mktsegment, count(*) from customer join orders on o_custkey = c_custkey join lineitem on l_orderkey = o_orderkey where l_shipdate = date '1995-09-09' group by 1 order by 1
