select * from lineitem where l_orderkey = 5999975 order by l_linenumber
