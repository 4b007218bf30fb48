select o_orderstatus, count(*) from orders o where o_totalprice > (select avg(o_totalprice) * 2 from orders) group by 1 order by 1
