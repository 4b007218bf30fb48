select count(*) from lineitem where l_shipdate - l_commitdate > 10 and l_returnflag = 'R'
