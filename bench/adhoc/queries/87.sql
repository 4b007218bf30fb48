select avg(length(l_comment)) from lineitem where l_quantity < 10
