select upper(substr(o_comment, 1, 3)), count(*) from orders where o_orderdate >= date '1998-01-01' group by 1 order by 2 desc, 1 limit 10
