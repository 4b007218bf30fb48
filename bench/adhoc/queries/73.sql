select l_orderkey, count(*) from lineitem where l_orderkey in (select o_orderkey from orders where o_orderdate = date '1996-06-06') group by 1 order by 2 desc, 1 limit 10
