-- Plan shapes: what goes to the disks, what stays on the host, and when the
-- optimizer picks ActiveScan on its own.
CREATE TABLE big (id int, k int, grp text COLLATE "C", note text, amount numeric(10,2), day date);
INSERT INTO big
SELECT g, g % 1000, 'g' || (g % 10), 'note ' || g, (g % 10000) / 100.0, date '1995-01-01' + g % 1000
FROM generate_series(1, 200000) g;
ANALYZE big;
CREATE TABLE tiny (id int, v text);
INSERT INTO tiny VALUES (1, 'a'), (2, 'b');
ANALYZE tiny;

-- a selective scan of a large table is pushed down without forcing
EXPLAIN (COSTS OFF) SELECT id, note FROM big WHERE k = 7;
SELECT count(*) FROM big WHERE k = 7;

-- a two-row table is not worth connecting to the disks
EXPLAIN (COSTS OFF) SELECT * FROM tiny WHERE id = 1;

-- the testing switch forces it
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT * FROM tiny WHERE id = 1;
SELECT * FROM tiny WHERE id = 1;

-- disk and host quals side by side: LIKE runs on the disks; md5() stays on the host
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE k < 10 AND note LIKE '%99';
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM big WHERE k < 10 AND md5(note) = 'x';

-- ordering of text only under C collation; equality under any deterministic one
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE grp < 'g5';
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE note COLLATE ap_not_c < 'note 5';
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE note = 'note 5';

-- a host qual that cannot raise errors (text_lt is leakproof) does not keep
-- the quals after it from the disks; md5() could, but it costs more, so
-- PostgreSQL itself evaluates k < 10 first
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE note COLLATE ap_not_c < 'note 5' AND k < 10;
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE md5(note) < 'a' AND k < 10;
SELECT ap_check('SELECT id FROM big WHERE note COLLATE ap_not_c < ''note 5'' AND k < 10');

-- date compared with a folded timestamp constant (Q6's shape)
EXPLAIN (COSTS OFF) SELECT id FROM big
WHERE day >= date '1995-06-01' AND day < date '1995-06-01' + interval '1' month
	AND amount BETWEEN 0.05 AND 0.07;

-- switched off: plain PostgreSQL plans
SET active_pg.enable = off;
EXPLAIN (COSTS OFF) SELECT id, note FROM big WHERE k = 7;
RESET active_pg.enable;

-- EXPLAIN without ANALYZE does not contact the disks; with ANALYZE it reports
-- what they did (numbers vary, so only the labels are checked)
CREATE FUNCTION explain_labels(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		RETURN NEXT regexp_replace(line, '[0-9][0-9.]*', 'N', 'g');
	END LOOP;
END $$;
SELECT explain_labels('SELECT id FROM big WHERE k = 7');

-- JSON format works
CREATE FUNCTION explain_json(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO j;
	RETURN j::jsonb;
END $$;
SELECT j->0->'Plan'->>'Node Type' AS node, j->0->'Plan'->>'Custom Plan Provider' AS provider,
	(j->0->'Plan' ? 'Disk Filter') AS has_disk_filter
FROM explain_json('SELECT id FROM big WHERE k = 7') j;

-- not pushed: catalogs, temp tables, SERIALIZABLE
EXPLAIN (COSTS OFF) SELECT relname FROM pg_class WHERE relpages > 1000;
CREATE TEMP TABLE tmp AS SELECT * FROM big LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM tmp WHERE k = 1;
BEGIN ISOLATION LEVEL SERIALIZABLE;
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE k = 7;
COMMIT;

-- system columns are not shipped: ctid needs the host
EXPLAIN (COSTS OFF) SELECT ctid FROM big WHERE k = 7;
RESET active_pg.force_pushdown;
