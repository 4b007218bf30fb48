select l_returnflag, count(distinct l_linestatus) from lineitem where l_quantity = 1 group by 1 order by 1
