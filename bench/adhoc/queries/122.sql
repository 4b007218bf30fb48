select count(*) from part where p_name similar to '%(almond|ivory)%'
