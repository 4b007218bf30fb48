-- Bloom semi-join at the disks: the big side's ActiveScan carries a
-- Bloom filter of the small side's join keys.  Every query is compared with
-- active_pg.enable = off (ap_check); plan shapes pin where a filter may go.
SET active_pg.stripe_pages = 4;
-- bb is small (2.7 MB): with full-speed disks on a small machine the cost
-- model (model.c) keeps such a scan on the host; the plan shapes below are
-- about where a filter goes, so the disks sit behind a slow link here
SET active_pg.interconnect_mb_per_sec = 50;

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
			THEN 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) '
			ELSE 'EXPLAIN (COSTS OFF) ' END || q LOOP
		IF line LIKE '%Bloom%' AND line NOT LIKE '%Per Disk%' AND line NOT LIKE '%BloomShare%' THEN
			RETURN NEXT btrim(line);
		END IF;
	END LOOP;
END
$$;

-- EXPLAIN ANALYZE without timings and without the disks' counters, which
-- depend on the machine: the executions of each node.
CREATE FUNCTION ap_share_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN SELECT * FROM ap_explain('EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q) LOOP
		IF line NOT LIKE '%Disk%' AND line NOT LIKE '%Interconnect%' AND
		   line NOT LIKE '%Bytes Eligible%' AND line NOT LIKE '%Fallback%' AND
		   line NOT LIKE '%Work Items%' AND line NOT LIKE '%Xids%' THEN
			RETURN NEXT regexp_replace(line, '\s+Memory Usage: \S+', '');
		END IF;
	END LOOP;
END
$$;

-- Scans are pushed down by force throughout: the Bloom decisions below are
-- made on top of ActiveScan paths, whatever the base cost model prefers.
-- Small sides are tables until the section on join results.
SET active_pg.force_pushdown = on;
SET active_pg.force_bloom = on;
SET active_pg.bloom_join_results = off;
-- Filters sized for their keys only: under the default cap a small key set
-- gets 16 kB (bits are free while the filter stays in the CPU cache), which
-- would leave no false positive to measure (see the end of this file).
SET active_pg.bloom_max_bytes = '8kB';

-- plan shape: the filtered scan of bb runs the small side as its child
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'even';

-- EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON) as jsonb, pushdown and Bloom filters forced
CREATE FUNCTION ap_bloom_json(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	PERFORM set_config('active_pg.force_pushdown', 'on', true);
	PERFORM set_config('active_pg.force_bloom', 'on', true);
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO j;
	RETURN j::jsonb;
END $$;

-- structured EXPLAIN formats stay well-formed with a Bloom filter (the
-- filters are a labelled array of objects)
SELECT jsonb_typeof(j->0->'Plan'->'Plans'->0) AS plan_node,
	jsonb_path_query_first(j, 'strict $.**."Bloom Filters"[0]."Bloom Filter"') AS bloom_filter
FROM ap_bloom_json('SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''') j;

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

-- several filters on one scan: bb filtered by ss (i4) and by s2 (d, or t);
-- s2 holds every third key, ss every tenth (grp 'even': every twentieth)
CREATE TABLE s2 (d date, t text, tag text);
INSERT INTO s2
SELECT date '2020-01-01' + g, 'k' || g, CASE WHEN g % 2 = 0 THEN 'x' ELSE 'y' END
FROM generate_series(0, 499, 3) g;
INSERT INTO s2 VALUES (NULL, NULL, 'x');
-- s3 repeats some of ss's keys: joined to ss, its keys reach bb's i4 only
-- through the equivalence class bb.i4 = ss.k = s3.k
CREATE TABLE s3 (k int, w text);
INSERT INTO s3 SELECT g, 'w' || g FROM generate_series(0, 499, 40) g;
ANALYZE s2;
ANALYZE s3;

-- plan shape: one scan of bb carries both filters, each on its own line,
-- and runs both small sides before it starts
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d WHERE ss.grp = 'even';
SELECT ap_check('SELECT bb.id, ss.k, s2.t FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d WHERE ss.grp = ''even''');
SELECT ap_check('SELECT bb.id, s2.tag FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.t = s2.t');
-- a char column compared as text is no key: one filter only
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.nk = ss.nk JOIN s2 ON bb.c = ''c'' || substr(s2.t, 2) WHERE s2.tag = ''x''');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.nk = ss.nk JOIN s2 ON bb.c = ''c'' || substr(s2.t, 2) WHERE s2.tag = ''x''');
-- three filters, one of them through an equivalence class
SELECT ap_check('SELECT bb.id, s3.w FROM bb JOIN ss ON bb.i4 = ss.k JOIN s3 ON s3.k = ss.k JOIN s2 ON bb.d = s2.d');
SELECT ap_bloom_lines('SELECT bb.id, s3.w FROM bb JOIN ss ON bb.i4 = ss.k JOIN s3 ON s3.k = ss.k JOIN s2 ON bb.d = s2.d');
-- semi joins: IN and EXISTS on the same scan
SELECT ap_check('SELECT id FROM bb WHERE i4 IN (SELECT k FROM ss WHERE grp = ''odd'') AND EXISTS (SELECT 1 FROM s2 WHERE s2.d = bb.d AND s2.tag = ''x'')');
SELECT ap_bloom_lines('SELECT id FROM bb WHERE i4 IN (SELECT k FROM ss WHERE grp = ''odd'') AND EXISTS (SELECT 1 FROM s2 WHERE s2.d = bb.d AND s2.tag = ''x'')');
-- outer joins: bb on the nullable side of ss's join may take both filters ...
SELECT ap_check('SELECT ss.k, bb.id FROM ss LEFT JOIN (bb JOIN s2 ON bb.d = s2.d) ON bb.i4 = ss.k');
SELECT ap_bloom_lines('SELECT ss.k, bb.id FROM ss LEFT JOIN (bb JOIN s2 ON bb.d = s2.d) ON bb.i4 = ss.k');
-- ... but as the preserved side of s2's join it takes only ss's filter
SELECT ap_check('SELECT bb.id, s2.t FROM bb LEFT JOIN s2 ON bb.d = s2.d JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''');
SELECT ap_bloom_lines('SELECT bb.id, s2.t FROM bb LEFT JOIN s2 ON bb.d = s2.d JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''');
-- and never from an anti join's side
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE NOT EXISTS (SELECT 1 FROM s2 WHERE s2.d = bb.d)');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE NOT EXISTS (SELECT 1 FROM s2 WHERE s2.d = bb.d)');
-- one empty small side: no row can join, whatever the other holds
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d WHERE s2.tag = ''none''');

-- prepared statements: parameters in both small sides, generic plan
PREPARE bq2(text, text) AS
SELECT count(*), sum(bb.id) FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d
WHERE ss.grp = $1 AND s2.tag = $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE bq2('even', 'x');
EXECUTE bq2('even', 'x');
EXECUTE bq2('odd', 'x');
EXECUTE bq2('odd', 'none');
EXECUTE bq2('even', 'x');
RESET plan_cache_mode;
SET active_pg.enable = off;
SELECT count(*), sum(bb.id) FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d
WHERE ss.grp = 'even' AND s2.tag = 'x';
SELECT count(*), sum(bb.id) FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d
WHERE ss.grp = 'odd' AND s2.tag = 'x';
RESET active_pg.enable;

-- rescans: the filter whose small side depends on the outer row is rebuilt
-- each time, the other is built once
SELECT ap_check('SELECT p.g, (SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d WHERE ss.grp = p.g) FROM probe p');
SELECT ap_bloom_lines('SELECT p.g, (SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k JOIN s2 ON bb.d = s2.d WHERE ss.grp = p.g) FROM probe p', true);

-- measured false-positive rate (EXPLAIN ANALYZE).  One filter, no disk
-- filter: the true matches and the non-matching rows it decided are exactly
-- what SQL counts (NULL keys are neither), the rate is their ratio
SELECT (f->>'Bloom Filter True Matches')::bigint AS true_matches,
	(f->>'Bloom Filter Non-Matching Rows')::bigint AS nonmatching,
	abs((f->>'Bloom Filter Measured FPR')::float8 - (f->>'Bloom Filter False Passes')::float8 /
		(f->>'Bloom Filter Non-Matching Rows')::float8) < 1e-6 AS fpr_is_ratio,
	(f->>'Bloom Filter Measured FPR')::float8 BETWEEN 0 AND 4 * (f->>'Bloom Filter Estimated FPR')::float8 AS fpr_sane
FROM ap_bloom_json('SELECT count(*) FROM bb JOIN ss ON bb.nk = ss.nk') j,
	jsonb_path_query(j, 'strict $.**."Bloom Filters"[*]') f;
SELECT count(*) FILTER (WHERE nk IN (SELECT nk FROM ss)) AS true_matches,
	count(*) FILTER (WHERE nk NOT IN (SELECT nk FROM ss WHERE nk IS NOT NULL)) AS nonmatching
FROM bb;
-- beyond 65,536 dropped rows in one disk's scan the disks measure one drop
-- in 16 and count it 16 times (the measurement runs the disk filter on
-- every dropped row): the non-matching rows are then an estimate, and said
-- to be one; below that, as above, exact
CREATE TABLE bigm AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 400000) g;
CREATE TABLE smallm AS SELECT g AS k FROM generate_series(1, 10) g;
ANALYZE bigm, smallm;
SELECT (f->>'Bloom Filter Non-Matching Rows Sampled')::bool AS sampled,
	abs((f->>'Bloom Filter Non-Matching Rows')::float8 / 396000 - 1) < 0.01 AS nonmatching_near,
	(f->>'Bloom Filter True Matches')::bigint AS true_matches
FROM ap_bloom_json('SELECT count(*) FROM bigm JOIN smallm ON bigm.k = smallm.k') j,
	jsonb_path_query(j, 'strict $.**."Bloom Filters"[*]') f;
SELECT regexp_replace(l, '[0-9]+', 'N', 'g') AS line
FROM ap_bloom_lines('SELECT count(*) FROM bigm JOIN smallm ON bigm.k = smallm.k', true) l
WHERE l LIKE 'Bloom Filter Rows:%';
SELECT (f->>'Bloom Filter Non-Matching Rows Sampled')::bool AS sampled
FROM ap_bloom_json('SELECT count(*) FROM bb JOIN ss ON bb.nk = ss.nk') j,
	jsonb_path_query(j, 'strict $.**."Bloom Filters"[*]') f;
SELECT count(*) FROM bigm JOIN smallm ON bigm.k = smallm.k;
DROP TABLE bigm, smallm;
-- two filters: each is measured on the rows it alone decides; both see the
-- same shipped rows, at least those that truly match both
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.nk = ss.nk JOIN s2 ON bb.d = s2.d', true);
SELECT f->>'Bloom Filter' AS filter,
	(f->>'Bloom Filter True Matches')::bigint + (f->>'Bloom Filter False Passes')::bigint AS shipped,
	(f->>'Bloom Filter Measured FPR')::float8 BETWEEN 0 AND 4 * (f->>'Bloom Filter Estimated FPR')::float8 AS fpr_sane
FROM ap_bloom_json('SELECT count(*) FROM bb JOIN ss ON bb.nk = ss.nk JOIN s2 ON bb.d = s2.d') j,
	jsonb_path_query(j, 'strict $.**."Bloom Filters"[*]') f;
SELECT count(*) AS match_both FROM bb
WHERE nk IN (SELECT nk FROM ss) AND d IN (SELECT d FROM s2);
-- a key set over maintenance_work_mem is not kept: the rate is not measured
-- (many, 40000 keys, filters big50; big50 is too big a small side for many)
CREATE TABLE many AS SELECT g AS k FROM generate_series(1, 40000) g;
CREATE TABLE big50 AS SELECT g AS id FROM generate_series(1, 50000) g;
ANALYZE many;
ANALYZE big50;
RESET active_pg.bloom_max_bytes;
SET maintenance_work_mem = '1MB';
SELECT ap_bloom_lines('SELECT count(*) FROM big50 JOIN many ON big50.id = many.k', true);
RESET maintenance_work_mem;
SELECT ap_bloom_lines('SELECT count(*) FROM big50 JOIN many ON big50.id = many.k', true);
SET active_pg.bloom_max_bytes = '8kB';

-- a join result as the small side (active_pg.bloom_join_results): bb's i4
-- filtered by the keys of ss JOIN s2, fewer than ss's own
SET active_pg.bloom_join_results = on;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k;
SELECT ap_check('SELECT bb.id, s2.t FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k');
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k', true);
-- an anti join (LEFT JOIN ... IS NULL on the join key) and a semi join inside
-- the small side
SELECT ap_check('SELECT bb.id, x.t FROM bb JOIN (SELECT ss.k, s2.t FROM ss LEFT JOIN s2 ON ss.d = s2.d WHERE s2.d IS NULL) x ON bb.i4 = x.k');
SELECT ap_bloom_lines('SELECT bb.id, x.t FROM bb JOIN (SELECT ss.k, s2.t FROM ss LEFT JOIN s2 ON ss.d = s2.d WHERE s2.d IS NULL) x ON bb.i4 = x.k');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.d IN (SELECT d FROM s2 WHERE tag = ''x'')');
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.d IN (SELECT d FROM s2 WHERE tag = ''x'')');
SELECT ap_check('SELECT bb.id FROM bb WHERE (bb.i4, bb.d) IN (SELECT ss.k, s2.d FROM ss JOIN s2 ON ss.d = s2.d)');
SELECT ap_bloom_lines('SELECT bb.id FROM bb WHERE (bb.i4, bb.d) IN (SELECT ss.k, s2.d FROM ss JOIN s2 ON ss.d = s2.d)');
-- with the nullable side of an outer join as the big side
SELECT ap_check('SELECT ss.k, bb.id FROM (ss JOIN s2 ON ss.d = s2.d) LEFT JOIN bb ON bb.i4 = ss.k');
-- a volatile join clause inside the small side: its rows may differ from
-- one run to the next, so it never builds a filter
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d AND random() >= 0) ON bb.i4 = ss.k');
SELECT ap_check('SELECT bb.id FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d AND random() >= 0) ON bb.i4 = ss.k');
-- rescans and prepared statements with a join result as the small side
SELECT ap_check('SELECT p.g, (SELECT count(*) FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k WHERE ss.grp = p.g) FROM probe p');
PREPARE bq3(text) AS
SELECT count(*), sum(bb.id) FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k WHERE ss.grp = $1;
SET plan_cache_mode = force_generic_plan;
EXECUTE bq3('even');
EXECUTE bq3('odd');
RESET plan_cache_mode;
SET active_pg.enable = off;
EXECUTE bq3('even');
EXECUTE bq3('odd');
RESET active_pg.enable;
SET active_pg.bloom_join_results = off;

-- a small side with a volatile restriction is never run twice: no filter
-- on bb here (and ss is too small to be filtered by all of bb's keys)
SELECT ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.k >= random() - 1');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.k >= random() - 1');
-- non-deterministic collations are refused for text keys (only ICU has
-- them: skipped on a build without ICU, such as the PostgreSQL 18 one the
-- test suite uses)
DO $$
BEGIN
	BEGIN
		CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
	EXCEPTION WHEN feature_not_supported THEN
		RETURN;
	END;
	IF EXISTS (SELECT FROM ap_bloom_lines('SELECT bb.id FROM bb JOIN ss ON bb.t = ss.t COLLATE ci')) THEN
		RAISE EXCEPTION 'a Bloom filter over a non-deterministic collation';
	END IF;
	DROP COLLATION ci;
END $$;

-- BloomShare: the small side runs once whichever side of the Hash Join
-- starts first.  Here the probe side's first row is fetched before the Hash
-- is built (its startup cost is below the Hash's), so the filter's build runs
-- the shared small side to its end and the Hash replays the stored rows: the
-- filter's own child is never executed.
CREATE TABLE sbig AS
SELECT (g % 250) * 2 AS k, repeat('y', 300) AS pad FROM generate_series(1, 500) g;
ANALYZE sbig;
SELECT ap_share_lines('SELECT count(*), sum(length(sbig.pad)) FROM bb JOIN sbig ON bb.i4 = sbig.k');
SELECT ap_check('SELECT bb.id, sbig.k, sbig.pad FROM bb JOIN sbig ON bb.i4 = sbig.k');
-- ... and a Hash Join rescanned with a hash of several batches (small
-- work_mem) rebuilds its hash from the stored rows too, while the filtered
-- scan, whose outer parameter changed, rebuilds its filter from them
SET work_mem = '64kB';
SELECT ap_check('SELECT p.x, (SELECT sum(length(sbig.pad)) FROM bb JOIN sbig ON bb.i4 = sbig.k WHERE bb.id > p.x) FROM probe p');
SELECT ap_share_lines('SELECT p.x, (SELECT sum(length(sbig.pad)) FROM bb JOIN sbig ON bb.i4 = sbig.k WHERE bb.id > p.x) FROM probe p');
RESET work_mem;
-- ... and a nested share (the join result ss JOIN s2 as the small side, s2
-- filtered by ss's keys inside it) exists twice in the plan, in the Hash's
-- input and in the copy that is bb's filter's child plan: each filtered
-- scan uses the share of its own copy, so ss runs once, and EXPLAIN shows
-- each small side once, the copy that ran
SET active_pg.bloom_join_results = on;
SELECT ap_share_lines('SELECT count(*) FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k');
SET active_pg.bloom_join_results = off;
-- ... and on the probe side: the semi join hashes the filtered bb and probes
-- it with ss, whose BloomShare fills its store at the first row asked of it
-- (before the Hash is built); the filter reads "from the join's probe rows"
-- and its own child never runs
SELECT ap_share_lines('SELECT count(*) FROM ss WHERE EXISTS (SELECT 1 FROM bb WHERE bb.i4 = ss.k)');
SELECT ap_check('SELECT k, grp FROM ss WHERE EXISTS (SELECT 1 FROM bb WHERE bb.i4 = ss.k)');
-- ... rescanned with a parameter of the filtered side only: the probe side
-- replays its rows and the filter is rebuilt from them
SELECT ap_check('SELECT p.x, (SELECT count(*) FROM ss WHERE EXISTS (SELECT 1 FROM bb WHERE bb.i4 = ss.k AND bb.id > p.x)) FROM probe p');
SELECT ap_share_lines('SELECT p.x, (SELECT count(*) FROM ss WHERE EXISTS (SELECT 1 FROM bb WHERE bb.i4 = ss.k AND bb.id > p.x)) FROM probe p');

RESET active_pg.force_bloom;

-- cost: chosen when the small side is selective and the big side large ...
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = 'even';
-- ... not when every key of the big side joins ...
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN all_keys a ON bb.i4 = a.k;
-- ... two filters when each pays: a quarter of bb's keys are s4's, a third
-- are s2's dates ...
CREATE TABLE s4 AS SELECT g AS k FROM generate_series(0, 499, 4) g;
ANALYZE s4;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN s4 ON bb.i4 = s4.k JOIN s2 ON bb.d = s2.d;
SELECT ap_check('SELECT bb.id FROM bb JOIN s4 ON bb.i4 = s4.k JOIN s2 ON bb.d = s2.d');
-- ... a join result when it pays ...
SET active_pg.bloom_join_results = on;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM bb JOIN (ss JOIN s2 ON ss.d = s2.d) ON bb.i4 = ss.k;
SET active_pg.bloom_join_results = off;
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
-- (PostgreSQL's range error, worded differently by 18: its SQLSTATE only)
\set VERBOSITY sqlstate
SET active_pg.bloom_max_bytes = 32;
SET active_pg.bloom_max_bytes = '17MB';
\set VERBOSITY default
SET active_pg.bloom_max_bytes = '64kB';
SHOW active_pg.bloom_max_bytes;
SET active_pg.bloom_max_bytes = '8kB';
-- a fixed size (benchmarks), down to one narrow block of 128 bits: a filter
-- that small passes many rows that cannot join, never loses one that can
SET active_pg.bloom_bytes = 48;
\set VERBOSITY sqlstate
SET active_pg.bloom_bytes = '32MB';
\set VERBOSITY default
SET active_pg.bloom_bytes = 16;
SET active_pg.force_bloom = on;
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''');
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''', true);
SET active_pg.bloom_bytes = '8kB';
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''');
RESET active_pg.force_bloom;
RESET active_pg.bloom_bytes;

-- Under the default cap a small key set's filter gets 16 kB: the nk join
-- above, which passed false positives at 64 bytes, passes none
RESET active_pg.bloom_max_bytes;
SET active_pg.force_bloom = on;
SET active_pg.bloom_join_results = off;
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.nk = ss.nk', true);
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.nk = ss.nk');
RESET active_pg.force_bloom;

-- Where every tuple of a page is visible (PD_ALL_VISIBLE, after VACUUM)
-- and the filters' keys lie at fixed offsets, the disks decide the first
-- filter for the whole page at once (diskd/bloom.c: ap_bloom_first_batch);
-- tuples with nulls (bb.nk: every 7th) are still probed one by one.  The
-- same rows, and the same counts under EXPLAIN ANALYZE, as before VACUUM.
SET active_pg.bloom_max_bytes = '8kB';
SET active_pg.force_bloom = on;
VACUUM bb;
CREATE EXTENSION pg_visibility;
SELECT bool_and(pd_all_visible) AS every_page_all_visible FROM pg_visibility('bb');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i2 = ss.i8');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i8 = ss.k');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.d = ss.d');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k AND bb.d = ss.d');
SELECT ap_check('SELECT bb.id FROM bb JOIN s4 ON bb.i4 = s4.k JOIN s2 ON bb.d = s2.d');
SELECT ap_check('SELECT bb.id, ss.k FROM bb JOIN ss ON bb.i4 = ss.nk');
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN ss ON bb.i4 = ss.k WHERE ss.grp = ''even''', true);
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN s4 ON bb.i4 = s4.k JOIN s2 ON bb.d = s2.d', true);
DROP EXTENSION pg_visibility;
-- GEQO plans each join order it tries in a memory context of its own and
-- deletes it: the filters' estimates kept for the rest of a planning
-- (plan_memo.c) must go with it, and the plan and rows stay right
SET geqo_threshold = 2;
SET geqo_seed = 0;
SELECT ap_check('SELECT bb.id FROM bb JOIN s4 ON bb.i4 = s4.k JOIN s2 ON bb.d = s2.d');
SELECT ap_check('SELECT bb.id FROM bb JOIN ss ON bb.i4 = ss.k AND bb.d = ss.d');
SELECT ap_bloom_lines('SELECT count(*) FROM bb JOIN s4 ON bb.i4 = s4.k JOIN s2 ON bb.d = s2.d', true);
RESET geqo_seed;
RESET geqo_threshold;
RESET active_pg.force_bloom;

RESET active_pg.bloom_join_results;
RESET active_pg.force_pushdown;
DROP TABLE bb, ss, empty_ss, all_keys, probe, bb_tiny, s2, s3, s4, many, big50;
DROP FUNCTION ap_bloom_lines(text, bool);
DROP FUNCTION ap_bloom_json(text);
