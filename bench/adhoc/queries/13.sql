select substring(c_phone,1,2), count(*) from customer where substring(c_phone,1,2) in ('13','31','23','29','30','18','17') group by 1
