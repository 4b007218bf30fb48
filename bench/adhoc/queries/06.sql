select c_mktsegment, count(*), avg(c_acctbal) from customer group by 1
