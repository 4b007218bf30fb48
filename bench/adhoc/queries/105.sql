select count(*) from (select distinct l_orderkey from lineitem where l_returnflag = 'R') d
