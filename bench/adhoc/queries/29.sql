select count(*) from (select l_orderkey from lineitem where l_quantity > 49 union select o_orderkey from orders where o_totalprice > 450000) u
