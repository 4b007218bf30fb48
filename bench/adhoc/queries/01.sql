select count(*) from lineitem where l_comment like '%fluffily bold%'
