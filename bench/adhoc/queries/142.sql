select s_suppkey from supplier where not exists (select 1 from partsupp where ps_suppkey = s_suppkey and ps_availqty < 10) order by 1 limit 10
