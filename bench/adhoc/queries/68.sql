select p_type, count(*) from part where p_type like 'STANDARD%' and p_size in (1, 4, 7, 10, 13, 16, 19, 22) and p_container not in ('SM CASE', 'LG BOX') group by 1 order by 2 desc, 1 limit 10
