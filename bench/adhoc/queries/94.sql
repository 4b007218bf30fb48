select l_linestatus, count(*) from lineitem where l_shipdate <> l_receiptdate and l_linenumber = 1 group by 1 order by 1
