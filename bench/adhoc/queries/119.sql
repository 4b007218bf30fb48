select count(*) from orders where to_char(o_orderdate, 'YYYY') = '1996'
