select count(*) from lineitem l1 where l1.l_quantity > 45 and not exists (select 1 from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_linenumber > l1.l_linenumber)
