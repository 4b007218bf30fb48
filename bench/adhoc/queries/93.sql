select p_size, count(*) from part where p_comment like '%ly%' group by 1 order by 2 desc, 1 limit 5
