select o_orderkey, o_totalprice, (select count(*) from lineitem where l_orderkey = o_orderkey and l_returnflag = 'R') from orders where o_orderdate = date '1994-05-05' order by 2 desc limit 20
