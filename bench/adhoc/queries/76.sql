select count(*) from lineitem l join orders o on l_orderkey = o_orderkey where l_receiptdate - l_shipdate > 25 and o_orderstatus = 'F'
