select o_orderpriority, count(*) from orders where o_comment like 'a%' group by 1 order by 1
