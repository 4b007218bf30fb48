select l_shipmode, count(*) filter (where l_quantity > 25) from lineitem group by 1 order by 1
