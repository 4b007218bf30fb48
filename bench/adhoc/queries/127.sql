select count(*) from orders o join customer c on c.c_custkey = o.o_custkey where c.c_acctbal < -900
