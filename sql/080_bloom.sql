-- Bloom semi-join at the disks (issue 5): the big side's ActiveScan carries a
-- Bloom filter of the small side's join keys.  Every query is compared with
-- active_pg.enable = off (ap_check); plan shapes pin where a filter may go.
SET active_pg.stripe_pages = 4;
-- bb is small (2.7 MB): with full-speed disks on a small machine the cost
-- model (model.c) keeps such a scan on the host; the plan shapes below are
-- about where a filter goes, so the disks sit behind a slow link here
SET active_pg.interconnect_mbps = 50;

CREATE TABLE bb (id int, i2 int2, i4 int4, i8 int8, d date, n numeric,
				 t text, v varchar(20), c char(6), nk int, pad text);
INSERT INTO bb
SELECT g, (g % 500)::int2, g % 500, g % 500, date '2020-01-01' + g % 500,
	   (g % 500) / 2.0, 'k' || g % 500, 'k' || g % 500, 'c' || g % 500,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE g % 500 END, repeat('x', 40)
FROM generate_series(1, 30000) g;

-- the small side: every 10th key, in other stored forms (numeric scale 2,
-- wider char, int8 against int4), with duplicates and a NULL key
CREATE TABLE ss (k int, i2 int2, i8 int8, d date, n numeric(10,2), t text,
				 v varchar(30), c char(10), nk int, grp text);
INSERT INTO ss
SELECT g, g::int2, g, date '2020-01-01' + g, g / 2.0, 'k' || g, 'k' || g,
	   'c' || g, g, CASE WHEN g % 20 = 0 THEN 'even' ELSE 'odd' END
FROM generate_series(0, 499, 10) g;
INSERT INTO ss SELECT * FROM ss WHERE k < 100;
INSERT INTO ss VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'odd');
CREATE TABLE empty_ss (LIKE ss);
ANALYZE bb;
ANALYZE ss;
ANALYZE empty_ss;

-- The Bloom lines of EXPLAIN (COSTS OFF), or of EXPLAIN ANALYZE without
-- timings, with pushdown and Bloom filters forced.
CREATE FUNCTION ap_bloom_lines(q text, with_analyze bool DEFAULT false) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	PERFORM set_config('active_pg.force_pushdown', 'on', true);
	PERFORM set_config('active_pg.force_bloom', 'on', true);
	FOR line IN EXECUTE CASE WHEN with_analyze
			THEN 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) '
			ELSE 'EXPLAIN (COSTS OFF) ' END || q LOOP
		IF line LIKE '%Bloom%' AND line NOT LIKE '%Per Disk%' THEN
			RETURN NEXT btrim(line);
		END IF;
	END LOOP;
END
$$;

-- Scans are pushed down by force throughout: the Bloom decisions below are
-- made on top of ActiveScan paths, whatever the base cost model prefers.
SET active_pg.force_pushdown = on;
SET active_pg.force_bloom = on;

-- plan shape: the filtered scan of bb runs the small side as its child
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'even';

-- structured EXPLAIN formats stay well-formed with a Bloom filter (the
-- filters are a labelled array of objects); explain_json is from 020_plans
SELECT jsonb_typeof(j->0->'Plan'->'Plans'->0) AS plan_node,
	jsonb_path_query_first(j, 'strict $.**."Bloom Filters"[0]."Bloom Filter"') AS bloom_filter
FROM explain_json('SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''') j;

-- every key type, equal on and off (ap_check forces pushdown)
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i2 = ss.i2 WHERE ss.grp = ''even''');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i8 = ss.k');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.i8');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i2 = ss.i8');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.d = ss.d');
SELECT ap_check('SELECT bb.id, ss.n FROM bb JOIN ss ON bb.n = ss.n');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.t = ss.t');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.v = ss.v');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.v = ss.t');
SELECT ap_check('SELECT bb.id, ss.c FROM bb JOIN ss ON bb.c = ss.c');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i2 = ss.i8');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.n = ss.n');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.v = ss.t');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.c = ss.c');

-- NULL keys on both sides, duplicate keys on the small side
SELECT ap_check('SELECT bb.id, ss.k FROM bb JOIN ss ON bb.nk = ss.nk');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.nk = ss.k WHERE ss.k < 100');

-- multi-column keys
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k AND bb.t = ss.t AND bb.d = ss.d');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k AND bb.t = ss.t AND bb.d = ss.d');
-- a key on an expression of the small side
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k + 1');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k + 1');

-- empty small side: no row can join (the hash join above does not even
-- start the filtered scan; the scan itself would not contact the disks)
SELECT ap_check('SELECT bb.id FROM bb JOIN empty_ss s ON bb.i4 = s.k');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''none''');

-- all-matching small side: every key of bb
CREATE TABLE all_keys AS SELECT DISTINCT i4 AS k FROM bb;
ANALYZE all_keys;
SELECT ap_check('SELECT bb.id FROM bb JOIN all_keys a ON bb.i4 = a.k');
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN all_keys a ON bb.i4 = a.k', true);

-- semi joins: EXISTS and IN (either side may carry the filter)
SELECT ap_check('SELECT id FROM bb WHERE EXISTS (SELECT 1 FROM ss WHERE ss.k = bb.i4 AND ss.grp = ''even'')');
SELECT ap_check('SELECT id FROM bb WHERE t IN (SELECT t FROM ss WHERE grp = ''odd'')');
SELECT ap_check('SELECT k FROM ss WHERE EXISTS (SELECT 1 FROM bb WHERE bb.i4 = ss.k)');
SELECT ap_bloom_lines('SELECT id FROM bb WHERE EXISTS (SELECT 1 FROM ss WHERE ss.k = bb.i4 AND ss.grp = ''even'')');

-- outer joins: only the nullable side may be filtered
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ss LEFT JOIN bb ON bb.i4 = ss.k;
SELECT ap_check('SELECT ss.k, bb.id FROM ss LEFT JOIN bb ON bb.i4 = ss.k');
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb LEFT JOIN ss ON bb.i4 = ss.k;
SELECT ap_check('SELECT bb.id, ss.k FROM bb LEFT JOIN ss ON bb.i4 = ss.k');
SELECT ap_bloom_lines('SELECT bb.id, ss.k FROM bb FULL JOIN ss ON bb.i4 = ss.k');
SELECT ap_check('SELECT bb.id, ss.k FROM bb FULL JOIN ss ON bb.i4 = ss.k');
-- anti join: neither side
SELECT ap_bloom_lines('SELECT id FROM bb WHERE NOT EXISTS (SELECT 1 FROM ss WHERE ss.k = bb.i4)');
SELECT ap_check('SELECT id FROM bb WHERE NOT EXISTS (SELECT 1 FROM ss WHERE ss.k = bb.i4)');

-- what the disks drop is exactly the rows without a partner (a tiny key set:
-- no false positive at 64 bytes); the expected count is computed in SQL
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''', true);
SELECT count(*) FILTER (WHERE i4 NOT IN (SELECT k FROM ss WHERE grp = 'even' AND k IS NOT NULL)) AS expect_dropped,
	   count(*) AS expect_tested
FROM bb;
-- with more keys in 64 bytes some false positives pass (est. 0.9%): the
-- dropped rows are the rows without a partner less those
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.nk = ss.nk', true);
SELECT count(*) FILTER (WHERE nk IS NULL OR nk NOT IN (SELECT nk FROM ss WHERE nk IS NOT NULL)) AS expect_dropped
FROM bb;

-- prepared statements: a parameter in the small side's restriction
PREPARE bq(text) AS SELECT count(*), sum(bb.id) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE bq('even');
EXECUTE bq('even');
EXECUTE bq('odd');
EXECUTE bq('none');
EXECUTE bq('even');
RESET plan_cache_mode;
SET active_pg.enable = off;
SELECT count(*), sum(bb.id) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'even';
SELECT count(*), sum(bb.id) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'odd';
RESET active_pg.enable;

-- rescans: the filtered scan re-executed under a subplan; the filter is built
-- once when the small side does not depend on the outer row ...
CREATE TABLE probe (x int, g text);
INSERT INTO probe VALUES (0, 'even'), (10000, 'odd'), (25000, 'even'), (NULL, 'odd');
SELECT ap_check('SELECT p.x, (SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE bb.id > p.x AND ss.grp = ''even'') FROM probe p');
SELECT ap_bloom_lines('SELECT p.x, (SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE bb.id > p.x AND ss.grp = ''even'') FROM probe p', true);
-- ... and rebuilt when it does
SELECT ap_check('SELECT p.g, (SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = p.g) FROM probe p');
SELECT ap_bloom_lines('SELECT p.g, (SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = p.g) FROM probe p', true);

-- a small side with a volatile restriction is never run twice: only ss,
-- filtered by bb's keys, carries a filter here
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.k >= random() - 1');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.k >= random() - 1');
-- non-deterministic collations are refused for text keys
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.t = ss.t COLLATE ci');

RESET active_pg.force_bloom;

-- cost: chosen when the small side is selective and the big side large ...
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'even';
-- ... not when every key of the big side joins ...
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN all_keys a ON bb.i4 = a.k;
-- ... nor when the big side is tiny
CREATE TABLE bb_tiny AS SELECT * FROM bb WHERE id <= 20;
ANALYZE bb_tiny;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb_tiny JOIN ss ON bb_tiny.i4 = ss.k WHERE ss.grp = 'even';
-- and never when switched off
SET active_pg.enable_bloom = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'even';
RESET active_pg.enable_bloom;

-- the filter's size cap is a bounded setting
SET active_pg.bloom_max_bytes = 32;
SET active_pg.bloom_max_bytes = '17MB';
SET active_pg.bloom_max_bytes = '64kB';
SHOW active_pg.bloom_max_bytes;
RESET active_pg.bloom_max_bytes;

RESET active_pg.force_pushdown;
DROP TABLE bb, ss, empty_ss, all_keys, probe, bb_tiny;
DROP COLLATION ci;
DROP FUNCTION ap_bloom_lines(text, bool);
