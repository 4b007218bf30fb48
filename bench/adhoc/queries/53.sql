select count(*), sum(o_totalprice) from orders where o_comment ilike '%pending%' and o_orderdate + interval '30 days' > date '1998-01-01'
