select count(*), sum(o_totalprice) from customer join orders on o_custkey = c_custkey
