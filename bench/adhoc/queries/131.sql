select p_brand, avg(p_retailprice) from part where p_partkey in (select l_partkey from lineitem where l_shipdate = date '1995-01-01') group by 1 order by 1
