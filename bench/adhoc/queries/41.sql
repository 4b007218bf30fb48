select count(*), sum(l_extendedprice) from lineitem l1 where l_partkey < 5000 and l_quantity > (select 1.5 * avg(l2.l_quantity) from lineitem l2 where l2.l_partkey = l1.l_partkey)
