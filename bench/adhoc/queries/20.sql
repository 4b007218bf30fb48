select count(*) from part where p_retailprice > 2000 and p_type like '%BRASS'
