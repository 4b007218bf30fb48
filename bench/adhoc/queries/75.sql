select s_suppkey, s_name, (select count(*) from partsupp where ps_suppkey = s_suppkey and ps_availqty > 9000) from supplier where s_nationkey = 7 order by 3 desc, 1 limit 10
