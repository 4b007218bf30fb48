select string_agg(distinct l_shipmode, ',' order by l_shipmode) from lineitem where l_orderkey < 100
