select sum(l_extendedprice * (1 - l_discount)) from lineitem where l_partkey between 1000 and 2000
