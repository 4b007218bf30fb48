select count(*) from lineitem where lower(l_shipmode) = 'mail'
