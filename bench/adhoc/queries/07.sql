select p_brand, count(distinct p_size) from part group by 1
