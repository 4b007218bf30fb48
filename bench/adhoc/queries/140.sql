select count(*) filter (where l_returnflag = 'R'), count(*) filter (where l_linestatus = 'F'), count(*) from lineitem where l_receiptdate - l_shipdate between 1 and 3
