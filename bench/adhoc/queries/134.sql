select l_linenumber, count(*) from lineitem group by 1 order by 1
