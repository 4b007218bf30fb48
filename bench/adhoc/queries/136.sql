select n_name, count(*) from supplier join nation on s_nationkey = n_nationkey where s_comment like '%Customer%Complaints%' group by 1 order by 1
