select l_shipmode, count(*) from lineitem where l_comment not like '%the%' group by 1 order by 1
