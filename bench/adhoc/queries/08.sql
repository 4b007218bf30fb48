select c_custkey, (select max(o_totalprice) from orders where o_custkey = c_custkey) from customer where c_acctbal > 9990
