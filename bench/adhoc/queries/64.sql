select count(*) from orders where o_custkey not in (select c_custkey from customer where c_mktsegment = 'AUTOMOBILE')
