select sum(l_extendedprice) from lineitem l join part p on p.p_partkey = l.l_partkey where p.p_type = 'PROMO BRUSHED STEEL' and l.l_shipdate >= date '1996-01-01'
