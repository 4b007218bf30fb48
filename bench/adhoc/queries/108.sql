select count(*) from customer where c_phone like '1%' and c_acctbal < 0
