with x as materialized (select * from orders where o_orderdate >= date '1997-01-01') select count(*), max(o_totalprice) from x where o_orderstatus = 'O'
