-- Aggregation at the disks (ActiveAgg): every aggregate x type x
-- NULL pattern x empty input x group-key kind compared with active_pg.enable
-- = off (ap_check(q, true, 'ActiveAgg'): the forced plan must aggregate at
-- the disks); plan shapes; HAVING/ORDER BY/LIMIT above; FILTER; fallback
-- tuples; host mode; a memory budget small enough to force many flushes.
SET active_pg.stripe_pages = 4;		-- spread the tables over all disks
SET max_parallel_workers_per_gather = 0;
SET work_mem = '64MB';		-- the host's merge table fits (the spill is tested apart)

-- Every value column has NULLs (id % 7 = 0), group k = 12 has only NULLs.
-- Floats are multiples of 1/4 small enough that every sum is exact in any
-- order (see the tolerance test at the end for the general case).
CREATE TABLE ag (
	id int, k int, i2 smallint, i4 int, i8 bigint, n numeric(15,3), f4 real,
	f8 float8, d date, ts timestamp, tz timestamptz, tx text COLLATE "C",
	vc varchar(10) COLLATE "C", bc char(4) COLLATE "C", bo bool);
INSERT INTO ag
SELECT g, g % 13,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE (g % 300 - 150)::smallint END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE g * 37 % 100003 - 50000 END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE g::bigint * 1000003 - 9000000000 END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE (g % 9973) / 8.0 - 300 END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE (g % 1000) / 4.0 - 100 END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE (g % 5000) / 4.0 - 600 END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE date '1992-01-01' + g % 2500 END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE timestamp '1995-06-01' + (g % 9999) * interval '37 minutes' END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE timestamptz '1995-06-01 00:00+00' + (g % 9999) * interval '41 minutes' END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE 'tx' || (g % 97) END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE 'v' || (g % 89) END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE 'b' || (g % 31) END,
	   CASE WHEN g % 7 = 0 OR g % 13 = 12 THEN NULL ELSE g % 5 <> 0 END
FROM generate_series(1, 30000) g;
ANALYZE ag;

-- the matrix: each aggregate over each type it supports, grouped by nothing,
-- by a column, by an expression; on all rows and on no row
DO $$
DECLARE
	agg text;
	col text;
	grp text;
	whr text;
	q text;
	r text;
	n int := 0;
BEGIN
	FOR agg, col IN
		SELECT a, c FROM (VALUES
			('count', '*'), ('count', 'i4'), ('count', 'tx'), ('count', 'bo'),
			('sum', 'i2'), ('sum', 'i4'), ('sum', 'i8'), ('sum', 'n'), ('sum', 'f4'), ('sum', 'f8'),
			('avg', 'i2'), ('avg', 'i4'), ('avg', 'i8'), ('avg', 'n'), ('avg', 'f4'), ('avg', 'f8'),
			('min', 'i2'), ('min', 'i4'), ('min', 'i8'), ('min', 'n'), ('min', 'f4'), ('min', 'f8'),
			('min', 'd'), ('min', 'ts'), ('min', 'tz'), ('min', 'tx'), ('min', 'vc'), ('min', 'bc'),
			('max', 'i2'), ('max', 'i4'), ('max', 'i8'), ('max', 'n'), ('max', 'f4'), ('max', 'f8'),
			('max', 'd'), ('max', 'ts'), ('max', 'tz'), ('max', 'tx'), ('max', 'vc'), ('max', 'bc'),
			('bool_and', 'bo'), ('bool_or', 'bo'), ('every', 'bo')) v(a, c)
	LOOP
		FOREACH grp IN ARRAY ARRAY['', 'k', 'id % 5', 'tx', 'd', 'bo, bc'] LOOP
			FOREACH whr IN ARRAY ARRAY['', 'WHERE id < 0'] LOOP
				q := format('SELECT %s%s(%s) FROM ag %s%s',
							CASE WHEN grp = '' THEN '' ELSE grp || ', ' END,
							agg, col, whr,
							CASE WHEN grp = '' THEN '' ELSE ' GROUP BY ' || grp END);
				r := ap_check(q, true, 'ActiveAgg');
				n := n + 1;
			END LOOP;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'aggregate matrix: % queries agree', n;
END
$$;

-- several aggregates of one argument share their disk states (avg = sum + count)
SELECT ap_check('SELECT k, sum(n) s, avg(n) a, count(n) c, min(n) mi, max(n) ma, count(*) cs FROM ag GROUP BY k', true, 'ActiveAgg');
-- computed keys and arguments (the expression language)
SELECT ap_check('SELECT extract(year FROM d), count(*), sum(i4 * 2), avg(n * (1 - n)) FROM ag GROUP BY 1', true, 'ActiveAgg');
SELECT ap_check('SELECT date_trunc(''month'', ts), i2 / 10, max(tx), min(f8 + 1) FROM ag GROUP BY 1, 2', true, 'ActiveAgg');
SELECT ap_check('SELECT k, sum(CASE WHEN tx LIKE ''tx1%'' THEN n ELSE 0 END) FROM ag GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT k, count(*) FILTER (WHERE tx ~ ''^tx1.*2''), sum(n) FILTER (WHERE tx !~* ''X3$'') FROM ag GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT coalesce(i2, -1) AS c, count(*) FROM ag GROUP BY 1', true, 'ActiveAgg');
-- NULL keys form one group; NULL arguments are skipped
SELECT ap_check('SELECT i2, count(*) cs, count(i4) c, sum(i8) FROM ag GROUP BY i2', true, 'ActiveAgg');
SELECT ap_check('SELECT k, n, f4, count(*) FROM ag GROUP BY k, n, f4', true, 'ActiveAgg');
-- FILTER
SELECT ap_check('SELECT k, count(*) FILTER (WHERE bo), sum(n) FILTER (WHERE i4 > 0), avg(f8) FILTER (WHERE tx < ''tx5'') FROM ag GROUP BY k', true, 'ActiveAgg');
-- with a disk filter
SELECT ap_check('SELECT k, count(*), sum(i4) FROM ag WHERE d >= ''1993-01-01'' AND d < ''1994-01-01'' GROUP BY k', true, 'ActiveAgg');
-- the same key twice, and a key that is not selected
SELECT ap_check('SELECT count(*), sum(i8) FROM ag GROUP BY k, k', true, 'ActiveAgg');
-- grouping without aggregates (duplicate elimination at the disks)
SELECT ap_check('SELECT k, bo FROM ag GROUP BY k, bo', true, 'ActiveAgg');
-- SELECT DISTINCT without aggregates is a grouping at the disks too
SELECT ap_check('SELECT DISTINCT k, bo, tx FROM ag', true, 'ActiveAgg');
SELECT ap_check('SELECT DISTINCT id % 7 AS m, d FROM ag WHERE i4 > 0', true, 'ActiveAgg');
-- expressions over aggregates and keys
SELECT ap_check('SELECT k + 1 k1, sum(i4) / nullif(count(i4), 0) q, max(d) - min(d) r FROM ag GROUP BY k', true, 'ActiveAgg');

-- plan shapes: HAVING stays on the node (Filter), ORDER BY and LIMIT above it
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF)
SELECT k, sum(i4), count(*) FROM ag GROUP BY k HAVING max(i4) > 49990 ORDER BY 2 DESC LIMIT 3;
SELECT k, sum(i4), count(*) FROM ag GROUP BY k HAVING max(i4) > 49990 ORDER BY 2 DESC LIMIT 3;
EXPLAIN (COSTS OFF)
SELECT k, count(*) FILTER (WHERE bo) FROM ag WHERE id > 100 GROUP BY k ORDER BY k;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), min(tx), max(tx) FROM ag WHERE i4 > 0;
EXPLAIN (COSTS OFF) SELECT DISTINCT k, bo FROM ag WHERE id > 5 ORDER BY k;
EXPLAIN (COSTS OFF) SELECT DISTINCT ON (k) k, id FROM ag;
SELECT * FROM ap_explain('EXPLAIN (COSTS OFF, FORMAT JSON)
SELECT k, avg(n) FROM ag GROUP BY k');

-- not aggregated at the disks: PostgreSQL's Agg over ActiveScan (which
-- sorts the input of an ordered or DISTINCT aggregate itself, as 15 does:
-- 16 added enable_presorted_aggregate)
DO $$
BEGIN
	IF current_setting('enable_presorted_aggregate', true) IS NOT NULL THEN
		SET enable_presorted_aggregate = off;
	END IF;
END $$;
EXPLAIN (COSTS OFF) SELECT k, count(DISTINCT i4) FROM ag GROUP BY k;
EXPLAIN (COSTS OFF) SELECT k, sum(i4 ORDER BY id) FROM ag GROUP BY k;
EXPLAIN (COSTS OFF) SELECT k, percentile_disc(0.5) WITHIN GROUP (ORDER BY i4) FROM ag GROUP BY k;
DO $$
BEGIN
	IF current_setting('enable_presorted_aggregate', true) IS NOT NULL THEN
		RESET enable_presorted_aggregate;
	END IF;
END $$;
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM ag GROUP BY ROLLUP (k);
EXPLAIN (COSTS OFF) SELECT k, string_agg(tx, ',') FROM ag GROUP BY k;
EXPLAIN (COSTS OFF) SELECT k, max(tx COLLATE ap_not_c) FROM ag GROUP BY k;
EXPLAIN (COSTS OFF) SELECT k, sum(random()) FROM ag GROUP BY k;
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM ag WHERE md5(tx) = 'x' GROUP BY k;
EXPLAIN (COSTS OFF) SELECT a.k, count(*) FROM ag a JOIN ag b ON a.id = b.id GROUP BY a.k;
SET work_mem = '64kB';		-- more groups than hash_mem holds: the host's table spills
EXPLAIN (COSTS OFF) SELECT id, count(*) FROM ag GROUP BY id;
-- ... for one key only, unless forced: an estimate over several columns is
-- too unsure to bet on the disks' reduction
-- (the same query under a hash_mem its groups fit gets ActiveAgg)
SET active_pg.force_pushdown = off;
SELECT count(*) AS activeagg_nodes
FROM ap_explain('EXPLAIN (COSTS OFF) SELECT k, vc, count(*) FROM ag GROUP BY k, vc') l
WHERE l LIKE '%ActiveAgg%';
SET work_mem = '64MB';
SELECT count(*) AS activeagg_nodes
FROM ap_explain('EXPLAIN (COSTS OFF) SELECT k, vc, count(*) FROM ag GROUP BY k, vc') l
WHERE l LIKE '%ActiveAgg%';
SET work_mem = '64kB';
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT id, k, count(*) FROM ag GROUP BY id, k;
RESET work_mem;
SET work_mem = '64MB';
SET active_pg.enable_agg = off;
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM ag GROUP BY k;
RESET active_pg.enable_agg;

-- count(x) of a NOT NULL column shares count(*)'s state at the disks (avg's
-- count too), under the aggregate's own FILTER; a nullable column keeps its
-- own count; decided from the relation as it is when the query starts
CREATE TABLE nn (k int, a int NOT NULL, b int, n numeric(8,2) NOT NULL);
INSERT INTO nn SELECT g % 7, g, CASE WHEN g % 3 = 0 THEN NULL ELSE g END, g / 4.0
FROM generate_series(1, 5000) g;
ANALYZE nn;
SELECT ap_check('SELECT k, count(a) c1, count(*) c2, avg(a) a1, avg(n) a2, count(b) c3, avg(b) a3 FROM nn GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT count(a) FILTER (WHERE b > 100) c1, avg(n) FILTER (WHERE b IS NULL) a1, count(*) FILTER (WHERE a % 2 = 0) c2, count(n) c3, sum(n) s1 FROM nn', true, 'ActiveAgg');
SELECT ap_check('SELECT count(a) c1, avg(a) a1, avg(n) a2 FROM nn WHERE a < 0', true, 'ActiveAgg');
PREPARE nnq AS SELECT k, count(a), avg(a), count(*) FROM nn GROUP BY k ORDER BY k;
EXECUTE nnq;
ALTER TABLE nn ALTER COLUMN a DROP NOT NULL;
UPDATE nn SET a = NULL WHERE k = 3;
EXECUTE nnq;
SELECT ap_check('SELECT k, count(a) c1, avg(a) a1, count(*) c2 FROM nn GROUP BY k', true, 'ActiveAgg');
DEALLOCATE nnq;
RESET active_pg.force_pushdown;

-- TPC-H Q1, Q6 and Q14-style queries over a small lineitem
CREATE TABLE li (
	l_orderkey bigint, l_partkey int, l_quantity numeric(15,2),
	l_extendedprice numeric(15,2), l_discount numeric(15,2), l_tax numeric(15,2),
	l_returnflag char(1), l_linestatus char(1), l_shipdate date, l_shipmode char(10));
INSERT INTO li
SELECT g, g % 2000, 1 + g % 50, (1 + g % 50) * (900 + g % 1000) / 10.0,
	   (g % 11) / 100.0, (g % 9) / 100.0,
	   (ARRAY['A', 'N', 'R'])[1 + g % 3], (ARRAY['F', 'O'])[1 + g % 2],
	   date '1992-01-01' + g % 2500, (ARRAY['PROMO AIR', 'TRUCK', 'PROMO SHIP', 'MAIL'])[1 + g % 4]
FROM generate_series(1, 40000) g;
ANALYZE li;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF)
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
	   sum(l_extendedprice) AS sum_base_price,
	   sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
	   sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
	   avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price,
	   avg(l_discount) AS avg_disc, count(*) AS count_order
FROM li WHERE l_shipdate <= date '1998-12-01' - interval '90 day'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus;
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
	   sum(l_extendedprice) AS sum_base_price,
	   sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
	   sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
	   avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price,
	   avg(l_discount) AS avg_disc, count(*) AS count_order
FROM li WHERE l_shipdate <= date '1998-12-01' - interval '90 day'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus;
EXPLAIN (COSTS OFF)
SELECT sum(l_extendedprice * l_discount) AS revenue FROM li
WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1994-01-01' + interval '1 year'
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24;
SELECT sum(l_extendedprice * l_discount) AS revenue FROM li
WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1994-01-01' + interval '1 year'
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24;
EXPLAIN (COSTS OFF)
SELECT 100.00 * sum(CASE WHEN l_shipmode LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
	   / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM li WHERE l_shipdate >= date '1995-09-01' AND l_shipdate < date '1995-09-01' + interval '1 month';
SELECT 100.00 * sum(CASE WHEN l_shipmode LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
	   / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM li WHERE l_shipdate >= date '1995-09-01' AND l_shipdate < date '1995-09-01' + interval '1 month';
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT l_returnflag, l_linestatus, sum(l_quantity) q, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) c, avg(l_discount), count(*) FROM li WHERE l_shipdate <= date ''1998-09-02'' GROUP BY 1, 2', true, 'ActiveAgg');

-- a budget small enough to force many flushes: same result, flushes counted
-- a counter of EXPLAIN ANALYZE's JSON, from the first plan node that has it
CREATE FUNCTION ap_analyze_count(q text, field text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
	RETURN jsonb_path_query_first(plan::jsonb, ('strict $.**.' || to_json(field)::text)::jsonpath)::bigint;
END
$$;
SET active_pg.disk_agg_mem = 64;
SELECT ap_check('SELECT id % 5000, count(*), sum(n), min(tx), max(f8), avg(i8) FROM ag GROUP BY 1', true, 'ActiveAgg');
SELECT ap_check('SELECT tx, vc, count(*), max(bc) FROM ag GROUP BY 1, 2', true, 'ActiveAgg');
SET active_pg.force_pushdown = on;
SELECT ap_analyze_count('SELECT id % 5000, count(*), sum(n) FROM ag GROUP BY 1',
						'Disk Memory Flushes') > 0 AS flushed;
CREATE FUNCTION ap_explain_masked(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		RETURN NEXT regexp_replace(regexp_replace(line, '[0-9.]+ (B|kB|MB|GB)', 'S', 'g'),
								   '[0-9]+(\.[0-9]+)?', 'N', 'g');
	END LOOP;
END
$$;
SELECT ap_explain_masked('SELECT id % 5000, count(*) FROM ag GROUP BY 1 HAVING count(*) > 100');
RESET active_pg.force_pushdown;
RESET active_pg.disk_agg_mem;

-- the simple path's cache of groups by packed key (diskd/agg_internal.h):
-- string keys of up to 7 bytes pack, longer ones take the hash table; NULL
-- and '' differ; a tiny budget's flushes empty the cache with the table
CREATE TABLE kc (id int, s text COLLATE "C", i int, n numeric(12,2));
INSERT INTO kc
SELECT g, (ARRAY[NULL, '', 'a', 'abcdefg', 'abcdefgh', 'abcdefg ', 'abcdefghi'])[1 + g % 7],
	   CASE WHEN g % 11 = 0 THEN NULL ELSE g % 3 END, g / 7.0
FROM generate_series(1, 20000) g;
ANALYZE kc;
SELECT ap_check('SELECT s, i, count(*), sum(n) FROM kc GROUP BY 1, 2', true, 'ActiveAgg');
SELECT ap_check('SELECT i, count(s), sum(n) FROM kc GROUP BY 1', true, 'ActiveAgg');
SET active_pg.disk_agg_mem = 64;
SELECT ap_check('SELECT s, id % 3000, count(*), sum(n) FROM kc GROUP BY 1, 2', true, 'ActiveAgg');
RESET active_pg.disk_agg_mem;
DROP TABLE kc;

-- fallback tuples (the transaction's own writes) are aggregated on the host
BEGIN;
INSERT INTO ag (id, k, i4, n, tx) SELECT g, 100 + g % 3, g, g / 3.0, 'own' FROM generate_series(1, 500) g;
UPDATE ag SET n = n + 1000 WHERE id BETWEEN 10 AND 20;
DELETE FROM ag WHERE id BETWEEN 30 AND 40;
SELECT ap_check('SELECT k, count(*), sum(n), max(tx), avg(i4) FROM ag GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT count(*), sum(n) FROM ag', true, 'ActiveAgg');
ROLLBACK;

-- past hash_mem the host's merge table spills: the groups it has not go to
-- partitions merged after it (again, on further hash bits, when a partition
-- does not fit either), each group exact, with every aggregate kind, keys
-- of several types, many memory flushes at the disks (partials of one group
-- on both sides of a spill) and fallback tuples of groups new and old
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
SET active_pg.disk_agg_mem = 64;
SELECT ap_check('SELECT id, count(*) c1, count(i4) c2, sum(n) s1, sum(i2) s2, sum(f8) s3, avg(i8) a1, avg(f4) a2, min(tx), max(d), bool_or(bo) b1, bool_and(bo) b2 FROM ag GROUP BY id', true, 'ActiveAgg');
SELECT ap_check('SELECT id % 7000, tx, vc, count(*), sum(i4), max(ts) FROM ag GROUP BY 1, 2, 3', true, 'ActiveAgg');
SELECT ap_check('SELECT n, bc, count(*) FROM ag GROUP BY 1, 2 HAVING count(*) > 0', true, 'ActiveAgg');
BEGIN;
INSERT INTO ag (id, k, i4, n, tx) SELECT 100000 + g, g % 3, g, g / 3.0, 'own' FROM generate_series(1, 3000) g;
UPDATE ag SET n = n + 1000 WHERE id % 10 = 3;
DELETE FROM ag WHERE id % 100 = 7;
SELECT ap_check('SELECT id, count(*), sum(n), max(tx), avg(i4) FROM ag GROUP BY id', true, 'ActiveAgg');
SELECT ap_check('SELECT id % 9000, k, count(*), sum(n) FROM ag GROUP BY 1, 2', true, 'ActiveAgg');
ROLLBACK;
SET active_pg.force_pushdown = on;
SELECT ap_analyze_count('SELECT id, count(*), sum(n) FROM ag GROUP BY id', 'Host Merge Spills') > 0 AS spilled,
	   ap_analyze_count('SELECT id, count(*), sum(n) FROM ag GROUP BY id', 'Host Merge Partitions Merged') > 0 AS merged_after,
	   ap_analyze_count('SELECT id, count(*), sum(n) FROM ag GROUP BY id', 'Host Merge Spilled Groups') > 0 AS groups_spilled;
-- a correlated rescan starts a new table and leaves no partition behind
EXPLAIN (COSTS OFF) SELECT o.k, (SELECT count(*) FROM (SELECT id FROM ag WHERE ag.k = o.k GROUP BY id) s)
FROM (VALUES (1), (5)) o(k) ORDER BY 1;
SELECT o.k, (SELECT count(*) FROM (SELECT id FROM ag WHERE ag.k = o.k GROUP BY id) s)
FROM (VALUES (1), (5)) o(k) ORDER BY 1;
RESET active_pg.force_pushdown;
SET active_pg.enable = off;
SELECT o.k, (SELECT count(*) FROM (SELECT id FROM ag WHERE ag.k = o.k GROUP BY id) s)
FROM (VALUES (1), (5)) o(k) ORDER BY 1;
RESET active_pg.enable;
RESET active_pg.disk_agg_mem;
RESET hash_mem_multiplier;
SET work_mem = '64MB';

-- numeric sums beyond the disks' 128-bit range go back to the host
CREATE TABLE big_n (k int, n numeric);
INSERT INTO big_n SELECT g % 3, 9.99e35 FROM generate_series(1, 1000) g;
INSERT INTO big_n VALUES (0, 'NaN'), (1, 'Infinity'), (2, 1e-40);
SELECT ap_check('SELECT k, sum(n), avg(n), min(n), max(n) FROM big_n GROUP BY k', true, 'ActiveAgg');
-- ... also on the disks' fast path for counts and sums of 64-bit values: a
-- sum rescaled past 10^38 (16 digits over 10,000 times per group on each
-- disk, then a value of scale 18) sends its tuple back and puts back what the specs before it did
-- (count(*) counted it, sum(a) rescaled its state)
CREATE TABLE big_s (k int, a numeric, b numeric);
INSERT INTO big_s SELECT g % 2, 1, 9999999999999999 FROM generate_series(1, 120000) g;
INSERT INTO big_s SELECT g % 2, 0.5, 0.000000000000000001 FROM generate_series(1, 10) g;
SELECT ap_check('SELECT k, count(*), sum(a) AS sa, sum(b) AS sb FROM big_s GROUP BY k', true, 'ActiveAgg');
SET active_pg.force_pushdown = on;
SELECT ap_analyze_count('SELECT k, count(*), sum(a) AS sa, sum(b) AS sb FROM big_s GROUP BY k',
						'Fallback Tuples') AS fell_back;
RESET active_pg.force_pushdown;
DROP TABLE big_s;

-- a table in the order of its key streams: each disk ships its table early
-- whenever it holds 16,384 groups (diskd/agg_table.c), each group once but
-- for the few a stripe unit's edge cuts in two; keys in no order come back
-- after each disk's first early flush, which ends the streaming
CREATE TABLE st (k int, v numeric, s int);
INSERT INTO st SELECT g / 2, g % 100, (g * 7919) % 30000 FROM generate_series(0, 199999) g;
ANALYZE st;
SELECT ap_check('SELECT k, count(*), sum(v) FROM st GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT s, count(*), sum(v) FROM st GROUP BY s', true, 'ActiveAgg');
SET active_pg.force_pushdown = on;
SELECT ap_analyze_count('SELECT k, count(*), sum(v) FROM st GROUP BY k', 'Disk Streamed Flushes') >= 4 AS streamed,
	   ap_analyze_count('SELECT k, count(*), sum(v) FROM st GROUP BY k', 'Disk Groups Shipped') < 100100 AS once,
	   ap_analyze_count('SELECT k, count(*), sum(v) FROM st GROUP BY k', 'Disk Memory Flushes') AS memory_flushes;
SELECT ap_analyze_count('SELECT s, count(*), sum(v) FROM st GROUP BY s', 'Disk Streamed Flushes') AS streamed_scattered;
RESET active_pg.force_pushdown;
DROP TABLE st;

-- prepared statements: Params shipped as constants, host mode under SERIALIZABLE
SET active_pg.force_pushdown = on;
PREPARE pa(int) AS SELECT k, count(*), sum(i4) FROM ag WHERE i4 > $1 GROUP BY k ORDER BY k;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pa(0);
BEGIN ISOLATION LEVEL SERIALIZABLE;
EXECUTE pa(0);
COMMIT;
EXECUTE pa(0);
RESET plan_cache_mode;
-- a correlated subquery: the node is rescanned with new Params
CREATE TABLE keys13 AS SELECT generate_series(0, 14) AS k;
EXPLAIN (COSTS OFF) SELECT o.k, (SELECT sum(n) FROM ag WHERE ag.k = o.k) FROM keys13 o;
SELECT o.k, (SELECT sum(n) FROM ag WHERE ag.k = o.k) FROM keys13 o ORDER BY 1;
RESET active_pg.force_pushdown;
SET active_pg.enable = off;
SELECT o.k, (SELECT sum(n) FROM ag WHERE ag.k = o.k) FROM keys13 o ORDER BY 1;
RESET active_pg.enable;

-- float sums that are not exact may differ in the last bits, as with
-- PostgreSQL's own parallel aggregation: compare with a tolerance
CREATE TABLE fl (k int, x float8, y real);
INSERT INTO fl SELECT g % 4, 1.0 / g, 1.0 / g FROM generate_series(1, 20000) g;
SET active_pg.force_pushdown = on;
CREATE TEMP TABLE fl_on AS SELECT k, sum(x) sx, avg(x) ax, sum(y) sy, avg(y) ay FROM fl GROUP BY k;
SET active_pg.enable = off;
CREATE TEMP TABLE fl_off AS SELECT k, sum(x) sx, avg(x) ax, sum(y) sy, avg(y) ay FROM fl GROUP BY k;
RESET active_pg.enable;
RESET active_pg.force_pushdown;
SELECT count(*) AS groups,
	   bool_and(abs(a.sx - b.sx) <= 1e-12 * abs(b.sx)) AS sum_f8,
	   bool_and(abs(a.ax - b.ax) <= 1e-12 * abs(b.ax)) AS avg_f8,
	   bool_and(abs(a.sy - b.sy) <= 1e-3 * abs(b.sy)) AS sum_f4,
	   bool_and(abs(a.ay - b.ay) <= 1e-12 * abs(b.ay)) AS avg_f4
FROM fl_on a JOIN fl_off b USING (k);

DROP TABLE ag, li, big_n, keys13, fl;
DROP FUNCTION ap_analyze_count(text, text), ap_explain_masked(text);
