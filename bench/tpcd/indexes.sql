-- Primary keys and the usual foreign-key indexes, created after COPY as a
-- user loading TPC-H would.  No indexes on dates or other filter columns:
-- those scans are what the disks are for.
ALTER TABLE region ADD PRIMARY KEY (r_regionkey);
ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
ALTER TABLE part ADD PRIMARY KEY (p_partkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);

CREATE INDEX nation_regionkey_idx ON nation (n_regionkey);
CREATE INDEX supplier_nationkey_idx ON supplier (s_nationkey);
CREATE INDEX customer_nationkey_idx ON customer (c_nationkey);
CREATE INDEX partsupp_suppkey_idx ON partsupp (ps_suppkey);
CREATE INDEX orders_custkey_idx ON orders (o_custkey);
CREATE INDEX lineitem_partkey_suppkey_idx ON lineitem (l_partkey, l_suppkey);
CREATE INDEX lineitem_suppkey_idx ON lineitem (l_suppkey);
