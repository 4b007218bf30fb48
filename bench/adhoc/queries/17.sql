select distinct l_shipmode from lineitem
