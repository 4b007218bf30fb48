select distinct on (o_custkey) o_custkey, o_orderdate from orders where o_custkey < 5000 order by o_custkey, o_orderdate desc, o_orderkey
