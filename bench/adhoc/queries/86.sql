select count(*) from partsupp where ps_supplycost between 100 and 200 and ps_availqty > 5000
