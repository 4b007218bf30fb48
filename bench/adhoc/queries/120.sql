select o_orderkey, o_totalprice from orders order by o_totalprice desc, o_orderkey limit 5
