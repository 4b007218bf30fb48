-- Relations larger than one 1 GB segment file: the disks open
-- "relfilenode.1" and beyond as PostgreSQL lays them out, and a stripe unit
-- may sit in any of them.  fillfactor 10 spreads 820,000 short rows over
-- about 136,700 pages (1.07 GB) in a few seconds.  Every query is checked
-- against pushdown off (ap_check, 001_setup).
SET active_pg.direct_io = off;
CREATE TABLE seg (id int, k int, pad text) WITH (fillfactor = 10, autovacuum_enabled = off);
INSERT INTO seg SELECT g, g % 97, repeat('p', 80) FROM generate_series(1, 820000) g;
ANALYZE seg;
SELECT pg_relation_size('seg') / 8192 > 131072 AS past_one_segment,
	(SELECT count(*) FROM seg WHERE ctid >= '(131072,0)') AS rows_in_second_file;

-- The disks read every page of both files: pages read = the relation's pages.
CREATE FUNCTION seg_pages_read(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	l text;
	n bigint := 0;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF l ~ 'Disk Pages: read [0-9]+' THEN
			n := n + (regexp_match(l, 'Disk Pages: read ([0-9]+)'))[1]::bigint;
		END IF;
	END LOOP;
	RETURN n;
END
$$;
SET active_pg.force_pushdown = on;
SELECT seg_pages_read('SELECT id FROM seg WHERE k = 3') = pg_relation_size('seg') / 8192
	AS every_page_read;
RESET active_pg.force_pushdown;

-- rows of the second file, of the first, and of both
SELECT ap_check('SELECT id, k FROM seg WHERE id > 800000 AND k < 5');
SELECT ap_check('SELECT id FROM seg WHERE k = 3');
SELECT ap_check('SELECT id, k FROM seg WHERE id BETWEEN 786000 AND 787000');
-- aggregation at the disks over both files
SELECT ap_check('SELECT k, count(*), sum(id), min(id), max(id) FROM seg GROUP BY k', true, 'ActiveAgg');
SELECT ap_check('SELECT count(*), sum(id) FROM seg', true, 'ActiveAgg');

-- a stripe unit of a whole segment (the second file is one disk's second
-- unit) and of half of one: each is read in pieces of 1 MB, so the default
-- memory budget of a disk holds the scan
SET active_pg.stripe_pages = 131072;
SELECT ap_check('SELECT count(*), sum(id) FROM seg WHERE k <> 7');
SELECT ap_check('SELECT id FROM seg WHERE id % 9973 = 0');
SET active_pg.stripe_pages = 65536;
SELECT ap_check('SELECT count(*), sum(id) FROM seg WHERE k <> 7');
RESET active_pg.stripe_pages;

-- reads with O_DIRECT
SET active_pg.direct_io = on;
SELECT ap_check('SELECT count(*), sum(id) FROM seg WHERE id % 1000 = 0');
SET active_pg.direct_io = off;

-- deleted and updated rows in the second file, and an open transaction's own
DELETE FROM seg WHERE id BETWEEN 810000 AND 810999;
UPDATE seg SET k = -1 WHERE id BETWEEN 815000 AND 815099;
SELECT ap_check('SELECT id, k FROM seg WHERE id > 805000 AND k < 2');
SELECT ap_check('SELECT k, count(*) FROM seg WHERE id > 805000 GROUP BY k', true, 'ActiveAgg');
BEGIN;
UPDATE seg SET k = -2 WHERE id > 819990;
INSERT INTO seg VALUES (-5, -2, 'mine');
SELECT ap_check('SELECT id, k FROM seg WHERE k < 0');
ROLLBACK;
SELECT ap_check('SELECT id, k FROM seg WHERE k < 0');

-- the distributed-device mode ships pages of both files
SET active_pg.enable_agg = off;
SET active_pg.scan_mode = 'pages';
SELECT ap_check('SELECT count(*), sum(id) FROM seg WHERE k = 11');
RESET active_pg.scan_mode;
RESET active_pg.enable_agg;

-- parallel participants sharing the disks' work items over both files, under
-- PostgreSQL's partial aggregation
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET max_parallel_workers_per_gather = 2;
SET active_pg.enable_agg = off;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT k, count(*), sum(id), max(md5(pad)) FROM seg GROUP BY k;
RESET active_pg.force_pushdown;
SELECT ap_check('SELECT k, count(*), sum(id), max(md5(pad)) FROM seg GROUP BY k');
SELECT ap_check('SELECT k, count(*) FROM seg WHERE id % 3 = 0 AND md5(pad) <> ''x'' GROUP BY k');
RESET active_pg.enable_agg;
RESET max_parallel_workers_per_gather;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

DROP FUNCTION seg_pages_read(text);
DROP TABLE seg;
RESET active_pg.direct_io;
