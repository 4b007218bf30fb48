select c_custkey, c_name from customer order by c_acctbal desc, c_custkey limit 10
