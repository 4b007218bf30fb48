select p_mfgr, count(*) from part join partsupp on ps_partkey = p_partkey where ps_availqty < 50 group by 1 order by 1
