select sum(l_extendedprice) from lineitem l join orders o on o_orderkey = l_orderkey where o_orderpriority = '1-URGENT' and l_shipmode = 'AIR'
