select count(*) from orders where o_comment ~ 'special.*requests'
