select o_custkey, count(*) from orders where o_orderstatus = 'P' group by 1 order by 2 desc, 1 limit 10
