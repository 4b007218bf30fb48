select count(*), sum(l_extendedprice) from lineitem where (l_shipmode = 'AIR' and l_quantity < 5) or (l_shipmode = 'RAIL' and l_discount = 0.10) or l_comment like 'zzz%'
