select l_shipmode, min(l_extendedprice), max(l_extendedprice) from lineitem where l_receiptdate >= date '1998-11-01' group by 1 order by 1
