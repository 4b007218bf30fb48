select o_clerk, count(*) from orders group by 1 order by 2 desc, 1 limit 5
