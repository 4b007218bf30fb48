select count(*) from lineitem where l_discount in (0.01, 0.02, 0.03) and l_tax > 0.05
