-- The cost model (extension/model.c, Riedel's throughput model), the
-- distributed-device mode (active_pg.scan_mode = 'pages') and the disk
-- statistics view.
SET max_parallel_workers_per_gather = 0;
-- the model's core count and measured disk work must not depend on the machine
SET active_pg.host_cores = 64;

CREATE FUNCTION active_pg_explain_lines(q text) RETURNS SETOF text LANGUAGE sql AS $$
	SELECT * FROM ap_explain(q)
$$;

CREATE TABLE m_tiny (a int);
INSERT INTO m_tiny VALUES (1), (2), (3);
CREATE TABLE m_big (id int, k int, v numeric, note text);
INSERT INTO m_big SELECT g, g % 1000, g % 97, 'note ' || g FROM generate_series(1, 100000) g;
-- forced statistics: k has 1000 values, id one per row (ActiveAgg's groups)
ALTER TABLE m_big ALTER COLUMN k SET (n_distinct = 1000),
	ALTER COLUMN id SET (n_distinct = -1);
ANALYZE m_tiny;
ANALYZE m_big;

-- a tiny table: connecting to the disks costs more than reading it
EXPLAIN (COSTS OFF) SELECT * FROM m_tiny WHERE a = 1;

-- full-speed disks, a selective query: the disks read with O_DIRECT from one
-- device (and share the host's cores), the host from its buffers; the disks
-- still win by a little
EXPLAIN (COSTS OFF) SELECT id FROM m_big WHERE k = 7;
-- ... but not when every row crosses to the host anyway
EXPLAIN (COSTS OFF) SELECT id, note FROM m_big WHERE k >= 0;

-- A table alone in its query whose scan ships every row: however cheap the
-- exchange rate makes the disks (a host priced at 20 ns a byte), the host's
-- own Seq Scan at measured speed is more than twice as fast, so no
-- ActiveScan is offered (planner.c, ap_seq_guard_seconds) ...
SET active_pg.host_scan_ns_per_byte = 20;
EXPLAIN (COSTS OFF) SELECT id, note FROM m_big ORDER BY id DESC LIMIT 5;
-- ... a selective scan of it still is ...
EXPLAIN (COSTS OFF) SELECT id FROM m_big WHERE k = 7 ORDER BY id DESC LIMIT 5;
-- ... and so is a joined table's, which Bloom filters are built on
CREATE TABLE m_dim (k int PRIMARY KEY, name text);
INSERT INTO m_dim SELECT g, 'k' || g FROM generate_series(0, 999) g;
ANALYZE m_dim;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_big b JOIN m_dim d USING (k) WHERE d.name LIKE 'k1%';
SELECT count(*) FROM m_big b JOIN m_dim d USING (k) WHERE d.name LIKE 'k1%';
SET active_pg.enable = off;
SELECT count(*) FROM m_big b JOIN m_dim d USING (k) WHERE d.name LIKE 'k1%';
RESET active_pg.enable;
-- Under Gather, though, a joined table's partial ActiveScan without a disk
-- qual (it would only project) is guarded like a table alone: the
-- participants' host work and the disks share the cores, so its share is
-- compared with the Parallel Seq Scan's at measured speed and not offered,
-- nor is the serial path, which the host's Seq Scan beats at measured speed
-- too (m_big's is kept for the Bloom paths only): stock's plan ...
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM m_big b JOIN m_dim d USING (k);
-- ... while a partial scan whose disks filter is still offered
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM m_big b JOIN m_dim d USING (k)
	WHERE b.v < 5;
SELECT ap_check('SELECT count(*), sum(b.v) FROM m_big b JOIN m_dim d USING (k)');
-- ... and the serial ActiveScan of a table without disk quals whose partial
-- path was not offered is no plan of its own either, in or out of parallel
-- plans (m_mid's, the inner side, ran under Gather once, in every
-- participant; then once above the Gather, cheaper on PostgreSQL's costs
-- than stock's plan and slower on the clock): stock's plan
SET active_pg.enable_bloom = off;
RESET active_pg.host_scan_ns_per_byte;

CREATE TABLE m_mid AS SELECT g AS id, repeat('y', 1000) AS pad FROM generate_series(1, 20000) g;
ANALYZE m_mid;
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM m_big b JOIN m_mid m USING (id);
SELECT ap_check('SELECT count(*), sum(b.v) FROM m_big b JOIN m_mid m USING (id)');
RESET active_pg.enable_bloom;
SET active_pg.host_scan_ns_per_byte = 20;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
-- Serially too, a joined table whose disks would only project is not
-- offered a plain ActiveScan the host's own Seq Scan at measured speed
-- beats, whether the disks' start is small beside that scan (here a start
-- made cheap: m_big) or not (m_dim) ...
SET active_pg.disk_start_ms = 0.001;
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM m_big b JOIN m_dim d USING (k);
-- ... while a Bloom filter still rides on the scan kept for it
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM m_big b JOIN m_dim d USING (k)
	WHERE d.name LIKE 'k1%';
SELECT ap_check('SELECT count(*), sum(b.v) FROM m_big b JOIN m_dim d USING (k) WHERE d.name LIKE ''k1%''');
RESET active_pg.disk_start_ms;
-- ... but not the outer side of NOT EXISTS, which no filter can shrink: it
-- is guarded as a table alone
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_big b
	WHERE NOT EXISTS (SELECT 1 FROM m_dim d WHERE d.k = b.k AND d.name LIKE 'k1%');
-- a filter only the host runs (no disk quals): the disks would ship every
-- row for it, so the host's own Seq Scan must merely be faster
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_big WHERE md5(note) = 'x';
-- the same for ActiveAgg: a small table's few groups, no disk quals, within
-- hash_mem, where the disks' start alone outweighs the host's aggregation
CREATE TABLE m_small AS SELECT g AS id, g % 5 AS k FROM generate_series(1, 3000) g;
ANALYZE m_small;
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM m_small GROUP BY k;
-- ... while m_big's aggregation still runs at the disks
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM m_big GROUP BY k;
-- ... and a selective filter an index answers: the host's bitmap scan at
-- the ratio of its cost to the Seq Scan's beats reading the whole table
CREATE TABLE m_idx AS SELECT g AS id, g % 1000 AS k, repeat('x', 60) AS pad
	FROM generate_series(1, 100000) g;
CREATE INDEX m_idx_k ON m_idx (k);
ANALYZE m_idx;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_idx WHERE k = 7;
-- force_pushdown still forces them
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT id, note FROM m_big ORDER BY id DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM m_small GROUP BY k;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_idx WHERE k = 7;
RESET active_pg.force_pushdown;
-- the guarded queries' results, pushed down (forced) and on the host, agree
SELECT ap_check('SELECT count(*) FROM m_big WHERE md5(note) = ''x''');
SELECT ap_check('SELECT id, note FROM m_big ORDER BY id DESC LIMIT 5');
SELECT ap_check('SELECT k, count(*) FROM m_small GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT count(*) FROM m_idx WHERE k = 7');
DROP TABLE m_small, m_idx;
RESET active_pg.host_scan_ns_per_byte;

-- A nested loop over a table within shared_buffers keeps PostgreSQL's
-- estimate (planner.c, ap_price_index_paths prices only probes of tables
-- larger than shared_buffers at measured speed; t/014_index_pricing.pl):
-- probes of 100 rows on 100 pages each, under a random_page_cost that
-- makes them cheap, stay a nested loop, as without the extension
CREATE TABLE m_scat AS SELECT g AS id, g % 1000 AS k, repeat('x', 60) AS pad
	FROM generate_series(1, 100000) g;
CREATE INDEX m_scat_k ON m_scat (k);
ANALYZE m_scat;
SET random_page_cost = 1.1;
SET active_pg.enable = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_dim d JOIN m_scat s USING (k) WHERE d.k < 200;
RESET active_pg.enable;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_dim d JOIN m_scat s USING (k) WHERE d.k < 200;
SELECT ap_check('SELECT count(*) FROM m_dim d JOIN m_scat s USING (k) WHERE d.k < 200');
RESET random_page_cost;
DROP TABLE m_scat;
DROP TABLE m_dim;

-- A Bloom filter is not offered where probing the big table by index for
-- the small side's rows costs a third of the filtered scan or less, both
-- at measured speed (bloom_planner.c, ap_bloom_probes_win): ten keys of
-- 100 scattered rows each take the nested loop, as without the extension
-- (offered priced at measured speed: PostgreSQL's own price of a probe
-- reads every heap page from the device); a hundred keys keep the filter
CREATE TABLE m_fact AS SELECT g AS id, g % 2000 AS k, repeat('x', 200) AS pad
	FROM generate_series(1, 200000) g;
CREATE INDEX m_fact_k ON m_fact (k);
CREATE TABLE m_dim2 (k int PRIMARY KEY, name text);
INSERT INTO m_dim2 SELECT g, 'k' || g FROM generate_series(0, 1999) g;
ANALYZE m_fact, m_dim2;
-- (a bitmap scan's Recheck Cond prints its operands in another order on 18)
SELECT l AS "QUERY PLAN" FROM ap_explain('EXPLAIN (COSTS OFF) SELECT sum(s.id) FROM m_dim2 d JOIN m_fact s USING (k) WHERE d.name LIKE ''k1_''') l
	WHERE l NOT LIKE '%Recheck Cond%';
EXPLAIN (COSTS OFF) SELECT sum(s.id) FROM m_dim2 d JOIN m_fact s USING (k) WHERE d.name LIKE 'k1__';
-- the forced filter's results agree with the host's
SELECT ap_check('SELECT sum(s.id) FROM m_dim2 d JOIN m_fact s USING (k) WHERE d.name LIKE ''k1_''', true, 'Bloom Filter');
SELECT ap_check('SELECT sum(s.id) FROM m_dim2 d JOIN m_fact s USING (k) WHERE d.name LIKE ''k1__''', true, 'Bloom Filter');
-- The same probes from a join result (ap_bloom_offer_probes for a chain's
-- join result, ap_bloom_try_probes where no filter can come from it, as
-- under Gather): twenty keys from a join of two tables, each probing 100
-- scattered rows, take the nested loop at measured speed serially and in
-- parallel, where PostgreSQL's price of the probes (made dear here by a
-- small effective_cache_size and a high random_page_cost) lost to hash
-- joins over a scan of all of m_fact (a Parallel Hash Join with workers)
CREATE TABLE m_map (k int PRIMARY KEY, k2 int);
INSERT INTO m_map SELECT g, (g * 7) % 2000 FROM generate_series(0, 1999) g;
CREATE TABLE m_tag (k int, tag text);
INSERT INTO m_tag SELECT g, CASE WHEN g % 100 = 0 THEN 'hot' ELSE 'cold' END
	FROM generate_series(0, 1999) g;
ANALYZE m_map, m_tag;
SET random_page_cost = 40;
SET effective_cache_size = '128kB';
SELECT l AS "QUERY PLAN" FROM ap_explain('EXPLAIN (COSTS OFF) SELECT sum(s.id) FROM m_map d JOIN m_tag t USING (k) JOIN m_fact s ON s.k = d.k2 WHERE t.tag = ''hot''') l
	WHERE l NOT LIKE '%Recheck Cond%';
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT l AS "QUERY PLAN" FROM ap_explain('EXPLAIN (COSTS OFF) SELECT sum(s.id) FROM m_map d JOIN m_tag t USING (k) JOIN m_fact s ON s.k = d.k2 WHERE t.tag = ''hot''') l
	WHERE l NOT LIKE '%Recheck Cond%';
SELECT ap_check('SELECT sum(s.id) FROM m_map d JOIN m_tag t USING (k) JOIN m_fact s ON s.k = d.k2 WHERE t.tag = ''hot''');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET random_page_cost;
RESET effective_cache_size;
SET max_parallel_workers_per_gather = 0;
DROP TABLE m_map, m_tag;
-- ... but only by an index the probe descends: m_fact's index on (id, k)
-- has k second, and a probe by k reads all of it
CREATE INDEX m_fact_id_k ON m_fact (id, k);
DROP INDEX m_fact_k;
EXPLAIN (COSTS OFF) SELECT sum(s.id) FROM m_dim2 d JOIN m_fact s USING (k) WHERE d.name LIKE 'k1_';
DROP TABLE m_fact, m_dim2;

-- a dimension whose keys reach far beyond the fact table's (a calendar of
-- 100,000 days, sales on 2,000 of them): PostgreSQL's join estimate takes
-- the calendar's whole domain and returns 1,000 rows for a year of 500
-- days, where 50,000 join; a filter's estimate (bloom_keys.c) and the
-- joins of its chain (bloom_planner.c, ap_bloom_join_rows) count only the
-- keys within the fact column's range
CREATE TABLE m_cal (k int PRIMARY KEY, yr int);
INSERT INTO m_cal SELECT g, g / 500 FROM generate_series(0, 99999) g;
CREATE TABLE m_sale AS SELECT g AS id, 50000 + g % 2000 AS k, repeat('x', 100) AS pad
	FROM generate_series(1, 200000) g;
-- samples of every row (300 per unit of the target): the estimates, and a
-- filter's hash count printed below, do not move with ANALYZE's sample
ALTER TABLE m_cal ALTER COLUMN yr SET STATISTICS 400;
ALTER TABLE m_sale ALTER COLUMN k SET STATISTICS 700;
ANALYZE m_cal, m_sale;
-- the estimated rows of q's first node of type node
CREATE FUNCTION m_join_rows(q text, node text DEFAULT 'Hash Join') RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN jsonb_path_query_first(j, '$.**?(@."Node Type" == $n)."Plan Rows"',
								  jsonb_build_object('n', node));
END $$;
SET max_parallel_workers_per_gather = 0;
SET active_pg.enable = off;
SELECT m_join_rows('SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) WHERE c.yr = 101') < 2000
	AS postgres_estimate_low;
RESET active_pg.enable;
SET active_pg.force_bloom = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) WHERE c.yr = 101;
SELECT m_join_rows('SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) WHERE c.yr = 101')
	BETWEEN 30000 AND 70000 AS filtered_join_estimate;
SELECT ap_check('SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) WHERE c.yr = 101', true, 'Bloom Filter');
-- the join above the chain is counted from the chain's rows too: its
-- relation's estimate (50: PostgreSQL's 1,000 for the calendar's join, a
-- twentieth of them matching an expression) times the calendar's factor
-- (bloom_planner.c, ap_bloom_carry_paths)
CREATE TABLE m_top AS SELECT g AS id FROM generate_series(0, 9) g;
ANALYZE m_top;
-- the estimated rows of the node under q's top one
CREATE FUNCTION m_top_rows(q text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN j->0->'Plan'->'Plans'->0->>'Plan Rows';
END $$;
SELECT m_top_rows('SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) JOIN m_top t ON t.id = s.id % 10 WHERE c.yr = 101')
	BETWEEN 1000 AND 5000 AS carried_estimate_above;
SET active_pg.enable = off;
SELECT m_top_rows('SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) JOIN m_top t ON t.id = s.id % 10 WHERE c.yr = 101') < 200
	AS postgres_estimate_above;
RESET active_pg.enable;
DROP FUNCTION m_top_rows;
DROP TABLE m_top;
RESET active_pg.force_bloom;
-- with workers: the Gather above the partial chain is planned for the
-- chain's rows, not PostgreSQL's estimate of the join relation, so the
-- join above it (over a parallel-restricted side) sees them too
-- (bloom_planner.c, ap_bloom_regather)
CREATE TABLE m_side AS SELECT g AS id, g AS v FROM generate_series(0, 9) g;
ANALYZE m_side;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
-- cores enough for the participants and the disks: the partial chain wins
SET active_pg.host_cores = 64;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) JOIN m_side t ON t.id = s.id % 10 WHERE c.yr = 101 AND t.v >= random() - 1;
SELECT m_join_rows('SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) JOIN m_side t ON t.id = s.id % 10 WHERE c.yr = 101 AND t.v >= random() - 1', 'Gather')
	BETWEEN 30000 AND 70000 AS gather_estimate;
SELECT count(*) FROM m_sale s JOIN m_cal c USING (k) JOIN m_side t ON t.id = s.id % 10 WHERE c.yr = 101 AND t.v >= random() - 1;
RESET active_pg.host_cores;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
DROP TABLE m_side;
RESET max_parallel_workers_per_gather;
DROP TABLE m_cal, m_sale;
-- a key of two columns that are a key together (TPC-H's partsupp): each
-- part has four suppliers, and PostgreSQL, multiplying the two clauses'
-- selectivities as if the columns were independent, expects about 80 of
-- the 20,000 rows that join; the chain's join counts the pairs as the
-- filter does, from the key's distinct count taken whole (bloom_keys.c,
-- ap_bloom_multikey_factor)
CREATE TABLE m_ps (pk int, sk int, note text, PRIMARY KEY (pk, sk));
INSERT INTO m_ps SELECT p, (p + j * 250) % 1000, 'n' || p % 10
	FROM generate_series(1, 2000) p, generate_series(0, 3) j;
CREATE TABLE m_li AS SELECT g AS id, g % 2000 + 1 AS pk,
	(g % 2000 + 1 + (g / 2000 % 4) * 250) % 1000 AS sk, repeat('x', 60) AS pad
	FROM generate_series(1, 200000) g;
ANALYZE m_ps, m_li;
SET max_parallel_workers_per_gather = 0;
SET active_pg.enable = off;
SELECT m_join_rows('SELECT count(*) FROM m_li l JOIN m_ps p USING (pk, sk) WHERE p.note = ''n3''') < 1000
	AS postgres_estimate_low;
RESET active_pg.enable;
SET active_pg.force_bloom = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM m_li l JOIN m_ps p USING (pk, sk) WHERE p.note = 'n3';
SELECT m_join_rows('SELECT count(*) FROM m_li l JOIN m_ps p USING (pk, sk) WHERE p.note = ''n3''')
	BETWEEN 4000 AND 40000 AS multikey_join_estimate;
SELECT ap_check('SELECT count(*) FROM m_li l JOIN m_ps p USING (pk, sk) WHERE p.note = ''n3''', true, 'Bloom Filter');
RESET active_pg.force_bloom;
RESET max_parallel_workers_per_gather;
DROP TABLE m_ps, m_li;
DROP FUNCTION m_join_rows(text, text);

-- emulated slow drives (15 MB/s, CPU at 0.1 of the host) and a
-- non-selective query: every row crosses anyway and the disks' CPUs are
-- slower than the host's, so the host plan wins
-- (the disks' emulation is reload-only: the launcher restarts the daemons
-- with it, and every session plans for the disks that run)
SET active_pg.disk_media_mb_per_sec = 15;
ALTER SYSTEM SET active_pg.disk_media_mb_per_sec = 15;
ALTER SYSTEM SET active_pg.disk_cpu_ratio = 0.1;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SHOW active_pg.disk_media_mb_per_sec;
EXPLAIN (COSTS OFF) SELECT id, note FROM m_big WHERE k >= 0;

-- the same drives behind a 10 MB/s interconnect and a selective query: the
-- traditional server waits for every page to cross the link, the disks
-- ship 0.1% of it
SET active_pg.interconnect_mb_per_sec = 10;
ALTER SYSTEM SET active_pg.disk_cpu_ratio = 0.5;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
EXPLAIN (COSTS OFF) SELECT id FROM m_big WHERE k = 7;
-- even a query that keeps every row ships less than its pages (projection)
EXPLAIN (COSTS OFF) SELECT id, note FROM m_big WHERE k >= 0;
RESET active_pg.interconnect_mb_per_sec;
ALTER SYSTEM RESET active_pg.disk_cpu_ratio;
ALTER SYSTEM RESET active_pg.disk_media_mb_per_sec;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);

-- ActiveAgg is costed by the same model: it pays when the disks turn many
-- rows into few groups; with about one group per row every row still crosses
-- (as a partial group), the host merges them after the scan, and
-- PostgreSQL's own Agg wins.  ActiveAgg is only offered where the host's
-- merge table fits in hash_mem.
SET work_mem = '64MB';
-- full-speed disks: 100000 rows into 1000 groups
EXPLAIN (COSTS OFF) SELECT k, count(*), sum(v) FROM m_big GROUP BY k;
EXPLAIN (COSTS OFF) SELECT DISTINCT k FROM m_big;
-- emulated slow drives (15 MB/s, CPU at 0.1 of the host), one group per
-- row: PostgreSQL's HashAggregate (over whichever scan is cheaper: both
-- are bound by the same drives)
ALTER SYSTEM SET active_pg.disk_media_mb_per_sec = 15;
ALTER SYSTEM SET active_pg.disk_cpu_ratio = 0.1;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SELECT x FROM (SELECT active_pg_explain_lines(
	'EXPLAIN (COSTS OFF) SELECT id, count(*), sum(v) FROM m_big GROUP BY id') x) y
	WHERE x ~ 'Aggregate|Active';
SELECT x FROM (SELECT active_pg_explain_lines(
	'EXPLAIN (COSTS OFF) SELECT DISTINCT id FROM m_big') x) y
	WHERE x ~ 'Aggregate|Active|Unique';
-- the same drives behind a 10 MB/s interconnect: 1000 groups cross instead
-- of the pages
SET active_pg.interconnect_mb_per_sec = 10;
ALTER SYSTEM SET active_pg.disk_cpu_ratio = 0.5;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
EXPLAIN (COSTS OFF) SELECT k, count(*), sum(v) FROM m_big GROUP BY k;
-- ... but with one group per row, ActiveScan ships fewer bytes (id and v,
-- with the row's TID) than the partial groups (three states), and
-- PostgreSQL aggregates them as they stream
EXPLAIN (COSTS OFF) SELECT id, count(*), sum(v), avg(v) FROM m_big GROUP BY id;
-- the prediction of ActiveAgg in EXPLAIN (VERBOSE) with costs: the merge
-- after the scan, the partial groups
SELECT count(*) AS model_lines FROM (
	SELECT x FROM (SELECT active_pg_explain_lines('EXPLAIN (VERBOSE) SELECT k, count(*), sum(v) FROM m_big GROUP BY k') x) y
	WHERE x LIKE '%Model: active % then merge % vs traditional %'
		OR x LIKE '%Model Inputs: in %, partial groups 4000 (0% during the scan)') z;
SELECT p->>'Custom Plan Provider' AS node, (p->>'Model Partial Groups')::float8 AS partials,
	(p->>'Model Active Time')::float8 < (p->>'Model Traditional Time')::float8 AS active_faster,
	(p->>'Model Merge Time')::float8 > 0 AS merges
FROM (SELECT active_pg_explain_lines('EXPLAIN (VERBOSE, FORMAT JSON) SELECT k, count(*), sum(v) FROM m_big GROUP BY k')::json->0->'Plan' AS p) j;
RESET active_pg.interconnect_mb_per_sec;
ALTER SYSTEM RESET active_pg.disk_cpu_ratio;
ALTER SYSTEM RESET active_pg.disk_media_mb_per_sec;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
RESET work_mem;

-- the model's prediction is in EXPLAIN (VERBOSE) with costs
SET active_pg.force_pushdown = on;
SELECT count(*) AS model_lines FROM (
	SELECT x FROM (SELECT active_pg_explain_lines('EXPLAIN (VERBOSE) SELECT id FROM m_big WHERE k = 7') x) y
	WHERE x LIKE '%Model: active % vs traditional %' OR x LIKE '%Model Inputs: in %') z;
RESET active_pg.force_pushdown;

-- distributed-device mode: the disks ship pages, the host does all the work;
-- the results equal stock PostgreSQL
SET active_pg.enable_agg = off;
SET active_pg.scan_mode = 'pages';
SELECT ap_check('SELECT id, note FROM m_big WHERE k = 7');
SELECT ap_check('SELECT id, v * 2 AS v2 FROM m_big WHERE k < 3 AND note LIKE ''note 1%''');
SELECT ap_check('SELECT count(*), sum(v) FROM m_big WHERE k BETWEEN 10 AND 20');
SELECT ap_check('SELECT * FROM m_tiny');
-- updated, deleted and own-transaction rows (visibility on page copies)
UPDATE m_big SET v = v + 1 WHERE k = 8;
DELETE FROM m_big WHERE k = 9;
SELECT ap_check('SELECT id, v FROM m_big WHERE k BETWEEN 7 AND 9');
BEGIN;
INSERT INTO m_big VALUES (-1, 7, 1, 'mine');
UPDATE m_big SET note = 'changed' WHERE id = 7;
DELETE FROM m_big WHERE id = 1007;
SELECT ap_check('SELECT id, note FROM m_big WHERE k = 7');
ROLLBACK;
SELECT ap_check('SELECT id, note FROM m_big WHERE k = 7');
-- an added column with a default (tuples shorter than the descriptor), NULLs, TOAST
ALTER TABLE m_big ADD COLUMN extra int DEFAULT 42;
INSERT INTO m_big VALUES (-2, 7, NULL, repeat('x', 10000), NULL);
SELECT ap_check('SELECT id, extra, length(note) FROM m_big WHERE k = 7');
-- pushdown forced in pages mode really ships pages: the host decodes them
SET active_pg.force_pushdown = on;
SELECT count(*) FROM m_big WHERE k = 7;
SELECT x FROM (SELECT regexp_replace(active_pg_explain_lines(
	'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM m_big WHERE k = 7'),
	'[0-9]+', 'N', 'g') x) y WHERE x ~ 'Host Pages|Disk Tuples|Interconnect';
RESET active_pg.force_pushdown;
RESET active_pg.scan_mode;
RESET active_pg.enable_agg;

-- the statistics view: its columns, and counters that grow with a scan
SELECT column_name FROM information_schema.columns
WHERE table_schema = 'active_pg' AND table_name = 'disk_stats' ORDER BY ordinal_position;
CREATE TEMP TABLE s0 AS SELECT sum(scans) AS scans, sum(pages_read) AS pages, sum(bytes_read) AS bytes
	FROM active_pg.disk_stats;
SET active_pg.force_pushdown = on;
SELECT count(*) FROM m_big WHERE k = 5;
RESET active_pg.force_pushdown;
SELECT s.scans > s0.scans AS scans_grew, s.pages > s0.pages AS pages_grew,
	s.bytes > s0.bytes AS bytes_grew, s.alive, s.restarts
FROM (SELECT sum(scans) AS scans, sum(pages_read) AS pages, sum(bytes_read) AS bytes,
		bool_and(alive) AS alive, sum(restarts) AS restarts FROM active_pg.disk_stats) s, s0;

-- EXPLAIN ANALYZE sums up the interconnect saving in Exadata's words: what
-- the disks read, what crossed, the reduction; and the rows the disks' filter
-- removed, as PostgreSQL shows a Filter's
SET active_pg.force_pushdown = on;
SELECT regexp_replace(x, '[0-9][0-9.]*', 'N', 'g') AS line FROM (
	SELECT active_pg_explain_lines('EXPLAIN (ANALYZE, BUFFERS OFF) SELECT id FROM m_big WHERE k = 7') x) y
	WHERE x ~ 'Interconnect:';
SELECT x AS line FROM (
	SELECT active_pg_explain_lines('EXPLAIN (ANALYZE, BUFFERS OFF) SELECT id FROM m_big WHERE k = 7') x) y
	WHERE x ~ 'Rows Removed';
RESET active_pg.force_pushdown;

-- Plans do not depend on what the session ran before: the same queries with
-- the same statistics and settings get the same plans after scans of every
-- kind, a slow filter among them (a long IN list over a computed string).
CREATE TEMP TABLE plan_queries (q text);
INSERT INTO plan_queries VALUES
	('SELECT id FROM m_big WHERE k = 7'),
	('SELECT id, note FROM m_big WHERE k >= 0'),
	('SELECT k, count(*), sum(v) FROM m_big GROUP BY k'),
	('SELECT sum(v) FROM m_big WHERE k < 500'),
	('SELECT count(*) FROM m_big b JOIN m_tiny t ON b.k = t.a'),
	('SELECT count(*) FROM m_big WHERE substring(note, 1, 9) IN (' ||
	 (SELECT string_agg(quote_literal('note ' || g), ',') FROM generate_series(1, 400) g) || ')');
CREATE FUNCTION plans_now() RETURNS TABLE (q text, plan text) LANGUAGE plpgsql AS $$
DECLARE
	r record;
	line text;
	acc text;
BEGIN
	FOR r IN SELECT p.q FROM plan_queries p LOOP
		acc := '';
		FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || r.q LOOP
			acc := acc || line || E'\n';
		END LOOP;
		q := r.q;
		plan := acc;
		RETURN NEXT;
	END LOOP;
END
$$;
CREATE TEMP TABLE plans_before AS SELECT * FROM plans_now();
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT q FROM plan_queries LOOP
		EXECUTE r.q;
		EXECUTE r.q;
	END LOOP;
END
$$;
SELECT count(*) AS queries, count(*) FILTER (WHERE a.plan = b.plan) AS same_plan
FROM plans_before b JOIN plans_now() a USING (q);
DROP FUNCTION plans_now();

DROP TABLE m_big, m_tiny;
DROP FUNCTION active_pg_explain_lines(text);

-- The model's machine constants are settings, measured on request by
-- active_pg.calibrate(), which changes nothing itself: it returns the
-- statements that would apply its measurements
SELECT setting, current_value > 0 AS has_value, measured > 0 AS measured,
	statement ~ ('^ALTER SYSTEM SET ' || setting || ' = [0-9.]+$') AS statement_ok
FROM active_pg.calibrate(scan_rows => 20000, runs => 1);
SELECT count(*) AS tables_left FROM pg_class WHERE relname LIKE 'calibrate%'
	AND relnamespace = 'active_pg'::regnamespace;
SHOW active_pg.disk_scan_ns_per_byte;
-- a non-default value changes the plan as a cost constant does: disks ten
-- times slower than the host per byte
CREATE TABLE m_cal (id int, k int, note text);
INSERT INTO m_cal SELECT g, g % 1000, 'note ' || g FROM generate_series(1, 100000) g;
ANALYZE m_cal;
SET active_pg.disk_scan_ns_per_byte = 20;
EXPLAIN (COSTS OFF) SELECT id FROM m_cal WHERE k = 7;
RESET active_pg.disk_scan_ns_per_byte;
EXPLAIN (COSTS OFF) SELECT id FROM m_cal WHERE k = 7;
DROP TABLE m_cal;

-- A grouping an index delivers in key order: PostgreSQL's
-- GroupAggregate over the index-only scan needs no hash table, and the
-- host's plan, predicted more than twice as fast as the disks' aggregation
-- of 50,000 groups scattered over the table, is kept (agg_planner.c) ...
CREATE TABLE m_grp AS SELECT g AS id, (g::bigint * 7919) % 50000 AS k, g % 13 AS v,
	repeat('x', 120) AS pad FROM generate_series(1, 500000) g;
CREATE INDEX m_grp_k ON m_grp (k);
VACUUM ANALYZE m_grp;
EXPLAIN (COSTS OFF) SELECT k FROM m_grp GROUP BY k HAVING count(*) > 9;
-- ... but not over the groups of a table that lies in key order, whose
-- disks each see a quarter of them (the model reads the key's correlation)
CREATE TABLE m_grp_ord AS SELECT g AS id, g / 10 AS k, g % 13 AS v,
	repeat('x', 120) AS pad FROM generate_series(1, 500000) g;
CREATE INDEX m_grp_ord_k ON m_grp_ord (k);
VACUUM ANALYZE m_grp_ord;
EXPLAIN (COSTS OFF) SELECT k, sum(v) FROM m_grp_ord GROUP BY k;
SELECT ap_check('SELECT k FROM m_grp GROUP BY k HAVING count(*) > 9', true, 'ActiveAgg');
SELECT ap_check('SELECT k, sum(v) FROM m_grp_ord GROUP BY k', true, 'ActiveAgg');
DROP TABLE m_grp, m_grp_ord;

-- A Bloom-filtered scan's disks encode and send only the rows the filter
-- keeps (ApModelFilterOutput): the filtered scan's disk CPU is the pass
-- over the pages, the probes and the kept rows' sending, below the
-- unfiltered scan's, which sends every wide row
CREATE TABLE m_wide AS SELECT g AS id, g % 5000 AS k, repeat('w', 300) AS pad
	FROM generate_series(1, 100000) g;
CREATE TABLE m_wdim (k int PRIMARY KEY, name text);
INSERT INTO m_wdim SELECT g, 'n' || g FROM generate_series(0, 4999) g;
ANALYZE m_wide, m_wdim;
-- a field of the prediction for m_wide's scan, wherever the join puts it
CREATE FUNCTION m_scan_model(q text, field text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (VERBOSE, FORMAT JSON) ' || q INTO j;
	RETURN jsonb_path_query_first(j, 'strict $.** ? (@."Relation Name" == "m_wide")')->>field;
END $$;
\set wq 'SELECT sum(length(s.pad)) FROM m_wdim d JOIN m_wide s USING (k) WHERE d.name = ''n7'''
SET active_pg.force_pushdown = on;
SET enable_nestloop = off;
SET enable_mergejoin = off;
SET active_pg.enable_bloom = off;
SELECT m_scan_model(:'wq', 'Model Disk CPU Time') AS unfiltered_cpu \gset
RESET active_pg.enable_bloom;
SET active_pg.force_bloom = on;
SELECT m_scan_model(:'wq', 'Model Disk CPU Time') AS filtered_cpu \gset
SELECT :filtered_cpu > 0 AS predicted, :filtered_cpu < 0.5 * :unfiltered_cpu AS sends_only_kept_rows;
SELECT ap_check(:'wq', true, 'Bloom Filter');
RESET active_pg.force_bloom;
RESET enable_mergejoin;
RESET enable_nestloop;
RESET active_pg.force_pushdown;
DROP FUNCTION m_scan_model(text, text);
DROP TABLE m_wide, m_wdim;
