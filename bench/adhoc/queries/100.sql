select s_name, s_acctbal from supplier where s_acctbal > (select avg(s_acctbal) from supplier) order by 2 desc, 1 limit 10
