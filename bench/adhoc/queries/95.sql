select count(*) from lineitem l where l_suppkey in (select s_suppkey from supplier where s_nationkey = 5)
