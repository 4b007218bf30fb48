select count(*) from lineitem l join part p on l_partkey = p_partkey where p_container = 'SM BOX' and l_quantity < 5
