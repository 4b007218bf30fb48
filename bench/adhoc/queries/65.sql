select c_mktsegment, count(o_orderkey), avg(o_totalprice) from customer left join orders on o_custkey = c_custkey and o_orderpriority = '1-URGENT' group by 1 order by 1
