select p_type, avg(p_retailprice) from part where p_name like 'forest%' group by 1 order by 1
