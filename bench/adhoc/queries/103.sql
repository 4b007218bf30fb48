select count(*) from lineitem where l_shipinstruct like 'TAKE%' and l_shipmode not in ('AIR', 'MAIL')
