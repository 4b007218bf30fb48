select count(*) from lineitem where l_comment ~* 'FURIOUS'
