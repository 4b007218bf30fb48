select avg(l_extendedprice) from lineitem where l_shipinstruct = 'DELIVER IN PERSON' and l_shipmode in ('AIR','REG AIR')
