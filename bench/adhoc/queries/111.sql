select count(*) from lineitem where l_extendedprice / l_quantity > 2000
