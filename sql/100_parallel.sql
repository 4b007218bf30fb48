-- Parallel-aware ActiveScan: Gather's participants (leader and workers)
-- divide the disks' work through dynamic shared memory, each claiming work
-- items and running its own conversation with their disks.  Parallel plans
-- are forced by making them free; every query is checked against pushdown
-- off (ap_check, 001_setup), and the shapes are pinned.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- many stripe units, so that the scan is cut into 4 work items per disk
SET active_pg.stripe_pages = 4;
-- ActiveScan under PostgreSQL's own (parallel) aggregation
SET active_pg.enable_agg = off;

CREATE TABLE pt (id int, k int, grp text COLLATE "C", amount numeric(10,2), day date);
INSERT INTO pt SELECT g, g % 100, 'g' || (g % 7), (g % 1000) / 10.0, date '2000-01-01' + g % 365
FROM generate_series(1, 100000) g;
ANALYZE pt;
CREATE TABLE pd (k int, name text);
INSERT INTO pd SELECT g, 'name ' || g FROM generate_series(0, 99) g;
ANALYZE pd;

-- the partial path under Gather, and the quals split as usual
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT id, amount FROM pt WHERE k < 50 AND md5(grp) <> 'x';
EXPLAIN (COSTS OFF) SELECT grp, count(*), sum(amount) FROM pt WHERE day < date '2000-03-01' GROUP BY grp;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT id, amount FROM pt WHERE k < 50 AND md5(grp) <> ''x''');
SELECT ap_check('SELECT grp, count(*), sum(amount) FROM pt WHERE day < date ''2000-03-01'' GROUP BY grp');
SELECT ap_check('SELECT * FROM pt');
SELECT ap_check('SELECT id, amount * 2 AS a2, k + 1 AS k1 FROM pt WHERE amount > 90');

-- Gather Merge, and LIMIT stopping the participants early
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT id FROM pt WHERE k = 5 ORDER BY id;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT id FROM pt WHERE k = 5 ORDER BY id');
SET active_pg.force_pushdown = on;
SELECT count(*) FROM (SELECT * FROM pt WHERE k = 3 LIMIT 7) s;
RESET active_pg.force_pushdown;

-- every page is read exactly once, by the participants together: the
-- workers' disk statistics reach the leader's EXPLAIN
CREATE FUNCTION par_explain(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO j;
	RETURN j::jsonb;
END $$;
CREATE FUNCTION scan_node(p jsonb) RETURNS jsonb LANGUAGE sql AS $$
	WITH RECURSIVE n(node) AS (
		SELECT p
		UNION ALL
		SELECT c FROM n, jsonb_array_elements(n.node->'Plans') c
	)
	SELECT node FROM n WHERE node->>'Custom Plan Provider' = 'ActiveScan' LIMIT 1
$$;
SET active_pg.force_pushdown = on;
SELECT s->>'Parallel Aware' AS parallel_aware,
	(s->>'Disk Pages Read')::bigint = pg_relation_size('pt') / 8192 AS every_page_once,
	(s->>'Disk Tuples Seen')::bigint AS tuples_seen,
	(s->>'Rows From Disks')::bigint AS rows_from_disks,
	(s->>'Work Items')::int AS work_items
FROM (SELECT scan_node(par_explain('SELECT count(*), sum(amount) FROM pt WHERE k < 60')->0->'Plan') s) x;
RESET active_pg.force_pushdown;
-- the last round of items (one per disk) is claimed in up to four pieces
-- of at least a stripe unit each: larger units give fewer pieces, none
-- where a disk's items hold a unit or less; whatever the split, every page
-- is read once, in both modes, and every row arrives once
CREATE FUNCTION split_check(stripe int, mode text)
RETURNS TABLE (stripe_pages int, scan_mode text, every_page_once bool, tuples bigint, rows_from_disks bigint, work_items int)
LANGUAGE plpgsql AS $$
DECLARE s jsonb;
BEGIN
	PERFORM set_config('active_pg.stripe_pages', stripe::text, true);
	PERFORM set_config('active_pg.scan_mode', mode, true);
	s := scan_node(par_explain('SELECT count(*), sum(amount) FROM pt WHERE k < 60')->0->'Plan');
	RETURN QUERY SELECT stripe, mode,
		coalesce((s->>'Disk Pages Read')::bigint, (s->>'Host Pages Received')::bigint) = pg_relation_size('pt') / 8192,
		(s->>'Disk Tuples Seen')::bigint, (s->>'Rows From Disks')::bigint, (s->>'Work Items')::int;
END $$;
SET active_pg.force_pushdown = on;
SELECT c.* FROM (VALUES (8), (16), (32)) st(n), (VALUES ('active'), ('pages')) m(mode),
	LATERAL split_check(st.n, m.mode) c ORDER BY 1, 2;
SELECT count(*), sum(amount) FROM pt WHERE k < 60;
RESET active_pg.force_pushdown;
DROP FUNCTION split_check(int, text);
SET active_pg.stripe_pages = 16;
SELECT ap_check('SELECT id, amount FROM pt WHERE k < 60');
SET active_pg.stripe_pages = 4;

-- joins above the scan: a parallel hash join whose inner side is a full,
-- parallel-safe ActiveScan in every participant, or a shared hash table
SET active_pg.force_pushdown = on;
SET enable_parallel_hash = off;
EXPLAIN (COSTS OFF) SELECT pd.name, count(*) FROM pt JOIN pd USING (k) WHERE pt.amount > 50 GROUP BY pd.name;
RESET enable_parallel_hash;
EXPLAIN (COSTS OFF) SELECT pd.name, count(*) FROM pt JOIN pd USING (k) WHERE pt.amount > 50 GROUP BY pd.name;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT pd.name, count(*) FROM pt JOIN pd USING (k) WHERE pt.amount > 50 GROUP BY pd.name');
SET enable_parallel_hash = off;
SELECT ap_check('SELECT pd.name, count(*) FROM pt JOIN pd USING (k) WHERE pt.amount > 50 GROUP BY pd.name');
RESET enable_parallel_hash;
SELECT ap_check('SELECT a.id AS a, b.id AS b FROM pt a JOIN pt b ON a.id = b.id + 1 WHERE a.k = 1 AND b.k = 0');

-- rescans: Gather re-executed for every outer row starts the work items over
SET enable_material = off;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF)
SELECT * FROM (SELECT count(*) AS n FROM pt WHERE k > 10) ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true;
SELECT * FROM (SELECT count(*) AS n FROM pt WHERE k > 10) ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true;
SELECT (s->>'Disk Pages Read')::bigint = 3 * (pg_relation_size('pt') / 8192) AS every_page_once_per_loop,
	(s->>'Work Items')::int AS work_items
FROM (SELECT scan_node(par_explain('SELECT * FROM (SELECT count(*) AS n FROM pt WHERE k > 10) ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true')->0->'Plan') s) x;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT * FROM (SELECT count(*) AS n FROM pt WHERE k > 10) ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true');
RESET enable_material;

-- init-plan values are shipped by every participant (Gather passes them on)
SET active_pg.force_pushdown = on;
SELECT * FROM ap_explain('EXPLAIN (COSTS OFF) SELECT count(*), sum(amount) FROM pt WHERE k <= (SELECT max(k) FROM pd WHERE k < 42)');
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT id FROM pt WHERE k <= (SELECT max(k) FROM pd WHERE k < 42)');
SELECT ap_check('SELECT count(*), sum(amount) FROM pt WHERE k <= (SELECT max(k) FROM pd WHERE k < 42)');

-- prepared statements: the generic plan's parameters reach the workers
SET plan_cache_mode = force_generic_plan;
SET active_pg.force_pushdown = on;
PREPARE pq(int, numeric) AS SELECT count(*), sum(amount) FROM pt WHERE k < $1 AND amount > $2;
EXPLAIN (COSTS OFF) EXECUTE pq(3, 10);
EXECUTE pq(3, 10);
EXECUTE pq(4, 50.5);
EXECUTE pq(1000, 0);
RESET active_pg.force_pushdown;
SET active_pg.enable = off;
SELECT count(*), sum(amount) FROM pt WHERE k < 3 AND amount > 10;
SELECT count(*), sum(amount) FROM pt WHERE k < 4 AND amount > 50.5;
SELECT count(*), sum(amount) FROM pt WHERE k < 1000 AND amount > 0;
RESET active_pg.enable;
DEALLOCATE pq;
RESET plan_cache_mode;

-- the scanning transaction's own writes, its subtransactions', and a
-- repeatable-read snapshot: workers see exactly what the leader sees
BEGIN;
INSERT INTO pt SELECT g, 1000, 'new', 1.00, date '2001-01-01' FROM generate_series(100001, 101000) g;
DELETE FROM pt WHERE id % 10 = 0;
UPDATE pt SET amount = amount + 1 WHERE id % 10 = 1;
SAVEPOINT s1;
INSERT INTO pt VALUES (200000, 1000, 'sub', 2.00, date '2001-01-02');
RELEASE s1;
SAVEPOINT s2;
INSERT INTO pt VALUES (200001, 1000, 'sub aborted', 2.00, date '2001-01-02');
DELETE FROM pt WHERE id % 10 = 2;
ROLLBACK TO s2;
SET LOCAL active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*), sum(amount) FROM pt WHERE k >= 0;
SELECT count(*), sum(amount), count(*) FILTER (WHERE k = 1000) AS mine FROM pt WHERE k >= 0;
SET LOCAL active_pg.force_pushdown = off;
SELECT ap_check('SELECT * FROM pt');
SELECT ap_check('SELECT grp, count(*), sum(amount) FROM pt WHERE k >= 0 GROUP BY grp');
SET LOCAL active_pg.enable = off;
SELECT count(*), sum(amount), count(*) FILTER (WHERE k = 1000) AS mine FROM pt WHERE k >= 0;
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM pd;
INSERT INTO pt VALUES (300000, 1000, 'after snapshot', 3.00, date '2001-01-03');
SELECT ap_check('SELECT * FROM pt WHERE k = 1000');
ROLLBACK;

-- a whole non-partial ActiveScan in one worker (Gather single copy): no
-- partial paths for so small a table, and every plan goes to a worker
SET min_parallel_table_scan_size = '1GB';
-- (force_parallel_mode, called debug_parallel_query from 16)
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
	THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', false) AS parallel_mode;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT id FROM pt WHERE k = 7;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT id FROM pt WHERE k = 7');
BEGIN;
DELETE FROM pt WHERE k = 7 AND id < 500;
INSERT INTO pt VALUES (400000, 7, 'mine', 4.00, date '2001-01-04');
SELECT ap_check('SELECT id, grp FROM pt WHERE k = 7');
ROLLBACK;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
	THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'off', false) AS parallel_mode;
SET min_parallel_table_scan_size = 0;

-- errors raised on a participant's fallback tuples are PostgreSQL's own
\set VERBOSITY terse
SET active_pg.force_pushdown = on;
SELECT count(*) FROM pt WHERE 100 / (k - 50) > 0;
RESET active_pg.force_pushdown;
SET active_pg.enable = off;
SELECT count(*) FROM pt WHERE 100 / (k - 50) > 0;
RESET active_pg.enable;
\set VERBOSITY default

-- the distributed-device mode divides the pages the same way
SET active_pg.scan_mode = 'pages';
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pt WHERE k < 10;
SELECT (s->>'Host Pages Received')::bigint = pg_relation_size('pt') / 8192 AS every_page_once,
	(s->>'Work Items')::int AS work_items
FROM (SELECT scan_node(par_explain('SELECT count(*) FROM pt WHERE k < 10')->0->'Plan') s) x;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT id, amount FROM pt WHERE k < 10');
SELECT ap_check('SELECT pd.name, count(*) FROM pt JOIN pd USING (k) WHERE pt.amount > 50 GROUP BY pd.name');
-- rescans: each execution checks its own pages again
SET enable_material = off;
SELECT ap_check('SELECT * FROM (SELECT count(*) AS n FROM pt WHERE k > 10) ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true');
RESET enable_material;
RESET active_pg.scan_mode;

-- a cached parallel plan run where the disks cannot be used (SERIALIZABLE):
-- the participants share a parallel heap scan instead
SET plan_cache_mode = force_generic_plan;
SET active_pg.force_pushdown = on;
PREPARE ps(int) AS SELECT count(*), sum(amount) FROM pt WHERE k < $1;
EXPLAIN (COSTS OFF) EXECUTE ps(30);
RESET active_pg.force_pushdown;
BEGIN ISOLATION LEVEL SERIALIZABLE;
EXECUTE ps(30);
SELECT (s->>'Host Mode Executions')::int >= 1 AS host_mode,
	(s->>'Pushdown Executions')::int AS pushdown_executions,
	(s->>'Host Mode Tuples')::bigint = (SELECT count(*) FROM pt) AS every_tuple_once
FROM (SELECT scan_node(par_explain('EXECUTE ps(30)')->0->'Plan') s) x;
COMMIT;
SET active_pg.enable = off;
SELECT count(*), sum(amount) FROM pt WHERE k < 30;
RESET active_pg.enable;
DEALLOCATE ps;
RESET plan_cache_mode;

-- partitions: partial ActiveScans under Parallel Append
CREATE TABLE pp (id int, k int, v text) PARTITION BY RANGE (id);
CREATE TABLE pp1 PARTITION OF pp FOR VALUES FROM (0) TO (30000);
CREATE TABLE pp2 PARTITION OF pp FOR VALUES FROM (30000) TO (60000);
INSERT INTO pp SELECT g, g % 13, 'v' || g FROM generate_series(0, 59999) g;
ANALYZE pp;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pp WHERE k = 3;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT * FROM pp WHERE k = 3');

-- the leader only coordinates: the workers claim every work item
SET parallel_leader_participation = off;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT grp, count(*), sum(amount) FROM pt WHERE k > 3 GROUP BY grp;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT grp, count(*), sum(amount) FROM pt WHERE k > 3 GROUP BY grp');
RESET parallel_leader_participation;

-- the switch: no parallel ActiveScan, and none in a worker
SET active_pg.enable_parallel = off;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*), sum(amount) FROM pt WHERE k < 50;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT count(*), sum(amount) FROM pt WHERE k < 50');
RESET active_pg.enable_parallel;

-- a scan whose shipped rows the host handles slower than the disks produce
-- them is offered only as the partial path when workers are allowed: the
-- serial plan over it (cheaper in PostgreSQL's costs) would leave the
-- rows and the join's probes to one process (planner.c, ap_host_bound).
-- The model's constants make the disks fast and the host slow on this
-- small table; with PostgreSQL's own parallel costs
-- (the join above it is PostgreSQL's choice: a Parallel Hash Left Join on
-- 15, a Parallel Hash Right Join on 18, so only the scan's kind is shown)
SET active_pg.disk_scan_ns_per_byte = 0.01;
SET active_pg.disk_start_ms = 0.001;
SET active_pg.host_scan_ns_per_byte = 50;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
SELECT scan_node(par_explain('SELECT pd.k, count(pt.id) FROM pd LEFT JOIN pt ON pt.k = pd.k AND pt.amount > 1 GROUP BY pd.k')->0->'Plan')->>'Parallel Aware' AS parallel_aware;
SELECT pd.k, count(pt.id) FROM pd LEFT JOIN pt ON pt.k = pd.k AND pt.amount > 1 WHERE pd.k < 5 GROUP BY pd.k ORDER BY 1;
SET active_pg.enable = off;
SELECT pd.k, count(pt.id) FROM pd LEFT JOIN pt ON pt.k = pd.k AND pt.amount > 1 WHERE pd.k < 5 GROUP BY pd.k ORDER BY 1;
RESET active_pg.enable;
-- serially the same scan runs as the plain ActiveScan
SET max_parallel_workers_per_gather = 0;
SELECT scan_node(par_explain('SELECT pd.k, count(pt.id) FROM pd LEFT JOIN pt ON pt.k = pd.k AND pt.amount > 1 GROUP BY pd.k')->0->'Plan')->>'Parallel Aware' AS parallel_aware;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
RESET active_pg.disk_scan_ns_per_byte;
RESET active_pg.disk_start_ms;
RESET active_pg.host_scan_ns_per_byte;

-- partial Bloom chains: each participant runs the small side whole, builds
-- the filter from its rows and scans its share of the table with it; the
-- joins above run in every participant (bloom_planner.c).  Small sides
-- without a partial path (no workers for them), so not under a Parallel
-- Hash (below)
CREATE TABLE pe (grp text COLLATE "C", label text);
INSERT INTO pe SELECT 'g' || g, CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END
FROM generate_series(0, 6) g;
ANALYZE pe;
ALTER TABLE pd SET (parallel_workers = 0);
ALTER TABLE pe SET (parallel_workers = 0);
SET active_pg.force_bloom = on;
-- the cores the model counts (sysconf otherwise): the machine of the tests
SET active_pg.host_cores = 2;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT pd.name, count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k WHERE pd.name LIKE 'name 1%' GROUP BY pd.name;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pt WHERE pt.k IN (SELECT k FROM pd WHERE name LIKE 'name 2%');
-- the participants together test every row once; each built the filter
SELECT (f->>'Bloom Filter Rows Tested')::bigint = (SELECT count(*) FROM pt) AS every_row_tested,
	(f->>'Bloom Filter True Matches')::bigint AS true_matches,
	(f->>'Bloom Filter Builds')::int >= 1 AS built,
	(s->>'Disk Pages Read')::bigint = pg_relation_size('pt') / 8192 AS every_page_once
FROM (SELECT scan_node(par_explain('SELECT pd.name, count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k WHERE pd.name LIKE ''name 1%'' GROUP BY pd.name')->0->'Plan') s) x,
	LATERAL (SELECT s->'Bloom Filters'->0 f) y;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT pd.name, count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k WHERE pd.name LIKE ''name 1%'' GROUP BY pd.name', true, 'Parallel Custom Scan');
SELECT ap_check('SELECT count(*) FROM pt WHERE pt.k IN (SELECT k FROM pd WHERE name LIKE ''name 2%'')', true, 'Parallel Custom Scan');
-- no worker launched, the leader building the filter and claiming every
-- work item alone; and the workers alone, the leader only gathering
SET max_parallel_workers = 0;
SELECT ap_check('SELECT pd.name, count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k WHERE pd.name LIKE ''name 1%'' GROUP BY pd.name', true, 'Parallel Custom Scan');
RESET max_parallel_workers;
SET parallel_leader_participation = off;
SELECT ap_check('SELECT pd.name, count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k WHERE pd.name LIKE ''name 1%'' GROUP BY pd.name', true, 'Parallel Custom Scan');
RESET parallel_leader_participation;
-- two filters on one partial scan
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k JOIN pe ON pe.grp = pt.grp WHERE pd.name LIKE 'name 3%' AND pe.label = 'even';
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT count(*), sum(pt.amount) FROM pt JOIN pd ON pt.k = pd.k JOIN pe ON pe.grp = pt.grp WHERE pd.name LIKE ''name 3%'' AND pe.label = ''even''', true, 'Parallel Custom Scan');
SELECT ap_check('SELECT pt.id, pd.name, pe.label FROM pt JOIN pd ON pt.k = pd.k JOIN pe ON pe.grp = pt.grp WHERE pd.name LIKE ''name 3%'' AND pe.label = ''even''');
ALTER TABLE pd RESET (parallel_workers);
-- under a Parallel Hash: the participants hash their parts of the small
-- side together and every one builds the filter from all of their keys
-- (bloom_share.c), instead of each running the small side whole
CREATE TABLE pq (k int, tag text COLLATE "C");
INSERT INTO pq SELECT CASE WHEN g % 50 = 0 THEN NULL ELSE g * 3 END, 'tag ' || (g % 13)
FROM generate_series(1, 30000) g;
ANALYZE pq;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = 'tag 3';
-- every participant's keys, and every row tested once
SELECT (f->>'Bloom Filter Keys')::bigint = (SELECT count(k) FROM pq WHERE tag = 'tag 3') AS all_keys,
	(f->>'Bloom Filter Distinct Keys')::bigint = (SELECT count(DISTINCT k) FROM pq WHERE tag = 'tag 3') AS all_distinct,
	(f->>'Bloom Filter Rows Tested')::bigint = (SELECT count(*) FROM pt) AS every_row_tested,
	f->>'Bloom Filter Not Measured' AS not_measured,
	(f->>'Bloom Filter Keys From Hash')::bool AS from_hash
FROM (SELECT scan_node(par_explain('SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3''')->0->'Plan') s) x,
	LATERAL (SELECT s->'Bloom Filters'->0 f) y;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3''', true, 'Parallel Hash');
SELECT ap_check('SELECT pt.id, pt.amount, pq.tag FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3''');
SELECT ap_check('SELECT count(*) FROM pt WHERE pt.id IN (SELECT k FROM pq WHERE tag = ''tag 5'')', true, 'Parallel Hash');
-- the leader alone (shared memory, no worker), and the workers alone
SET max_parallel_workers = 0;
SELECT ap_check('SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3''', true, 'Parallel Hash');
RESET max_parallel_workers;
SET parallel_leader_participation = off;
SELECT ap_check('SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3''', true, 'Parallel Hash');
RESET parallel_leader_participation;
-- no key at all: nothing joins
SET active_pg.force_pushdown = on;
SELECT count(*) FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = 'tag 3' AND pq.k < 0;
RESET active_pg.force_pushdown;
-- two filters: one under a Parallel Hash, one whose small side each
-- participant runs whole
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k JOIN pe ON pe.grp = pt.grp WHERE pq.tag = 'tag 3' AND pe.label = 'even';
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT count(*), sum(pt.amount) FROM pt JOIN pq ON pt.id = pq.k JOIN pe ON pe.grp = pt.grp WHERE pq.tag = ''tag 3'' AND pe.label = ''even''', true, 'Parallel Hash');
-- rescanned: the Gather on a nested loop's inner side runs again for every
-- outer row, its Parallel Hash and the shared keys with it
SET enable_material = off;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT * FROM (SELECT count(*) AS c, sum(pt.amount) AS s FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = 'tag 3') ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true;
SELECT (f->>'Bloom Filter Keys')::bigint = (SELECT count(k) FROM pq WHERE tag = 'tag 3') AS all_keys,
	(f->>'Bloom Filter Rows Tested')::bigint = 3 * (SELECT count(*) FROM pt) AS every_row_tested_thrice
FROM (SELECT scan_node(par_explain('SELECT * FROM (SELECT count(*) AS c, sum(pt.amount) AS s FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3'') ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true')->0->'Plan') s) x,
	LATERAL (SELECT s->'Bloom Filters'->0 f) y;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT * FROM (SELECT count(*) AS c, sum(pt.amount) AS s FROM pt JOIN pq ON pt.id = pq.k WHERE pq.tag = ''tag 3'') ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true', true, 'Parallel Hash');
RESET enable_material;
DROP TABLE pq;
-- the switch: the Bloom paths stay serial
SET active_pg.enable_parallel_bloom = off;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pt WHERE pt.k IN (SELECT k FROM pd WHERE name LIKE 'name 2%');
RESET active_pg.force_pushdown;
RESET active_pg.enable_parallel_bloom;
RESET active_pg.force_bloom;
RESET active_pg.host_cores;
DROP TABLE pe;

DROP TABLE pp;
DROP TABLE pt;
DROP TABLE pd;
DROP FUNCTION scan_node(jsonb);
DROP FUNCTION par_explain(text);
