-- What PostgreSQL's own regression suite found different with pushdown: each
-- case compares pushdown (forced, and where it matters the defaults) with
-- active_pg.enable = off.

-- A. Lateral references.  A relation that references another one laterally
-- gets no ActiveScan (its paths must be parameterized by the referenced
-- relation); the lateral value must not read as NULL, with the defaults too.
CREATE TABLE lat_small (a int, b int);
INSERT INTO lat_small VALUES (1, 10), (2, 20), (3, 30);
CREATE TABLE lat_big (a int, b int, pad text);
INSERT INTO lat_big SELECT g % 1000, g, repeat('x', 100) FROM generate_series(1, 300000) g;
ANALYZE lat_small;
ANALYZE lat_big;

-- the defaults: the optimizer chooses
SELECT lat_small.a, s.x, count(*) FROM lat_small LEFT JOIN LATERAL
  (SELECT lat_big.a, lat_small.b AS x FROM lat_big WHERE lat_big.b > 0) s ON lat_small.a = s.a
GROUP BY 1, 2 ORDER BY 1, 2;
EXPLAIN (COSTS OFF) SELECT lat_small.a, s.x, count(*) FROM lat_small LEFT JOIN LATERAL
  (SELECT lat_big.a, lat_small.b AS x FROM lat_big WHERE lat_big.b > 0) s ON lat_small.a = s.a
GROUP BY 1, 2 ORDER BY 1, 2;
-- forced: lat_big is never an ActiveScan (lat_small may be)
SELECT ap_check($$SELECT lat_small.a, s.x, count(*) FROM lat_small LEFT JOIN LATERAL
  (SELECT lat_big.a, lat_small.b AS x FROM lat_big WHERE lat_big.b > 0) s ON lat_small.a = s.a
  GROUP BY 1, 2$$, false, 'ActiveScan) on lat_big');
SELECT ap_check($$SELECT * FROM lat_small LEFT JOIN LATERAL
  (SELECT lat_small.b AS x, least(lat_small.b, lat_big.b) AS l, lat_big.b AS bb FROM lat_big
   WHERE lat_big.b < 4) s ON true$$, false, 'ActiveScan) on lat_big');
SELECT ap_check($$SELECT lat_small.a, coalesce(lat_small) AS whole, s.* FROM lat_small,
  LATERAL (SELECT lat_big.b + lat_small.b AS y FROM lat_big WHERE lat_big.a = lat_small.a
  AND lat_big.b < 3000) s$$);
-- lateral ActiveAgg would be the same mistake
SELECT ap_check($$SELECT * FROM lat_small, LATERAL (SELECT count(*), sum(lat_big.b + lat_small.b)
  FROM lat_big WHERE lat_big.a = lat_small.a) s$$, true, 'ActiveAgg');
SELECT ap_check($$SELECT lat_small.a, (SELECT count(*) FROM lat_big WHERE lat_big.a = lat_small.a
  AND lat_big.b < 5000) FROM lat_small$$);

-- C. WHERE CURRENT OF a cursor over a pushed-down scan: the scan slot
-- carries the row's TID (the disks ship it with every row).
CREATE TABLE cur_t (id int, v text);
INSERT INTO cur_t SELECT g, 'v' || g FROM generate_series(1, 1000) g;
CREATE TABLE cur_par (id int, v text);
CREATE TABLE cur_chi1 () INHERITS (cur_par);
CREATE TABLE cur_chi2 () INHERITS (cur_par);
INSERT INTO cur_par VALUES (1, 'p');
INSERT INTO cur_chi1 SELECT g, 'c1' FROM generate_series(2, 100) g;
INSERT INTO cur_chi2 SELECT g, 'c2' FROM generate_series(101, 200) g;

CREATE FUNCTION cur_run(forced bool) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	c refcursor;
BEGIN
	PERFORM set_config('active_pg.enable', (forced)::text, true);
	PERFORM set_config('active_pg.force_pushdown', 'on', true);
	-- plain, projected and computed scans
	OPEN c FOR SELECT * FROM cur_t WHERE id % 100 = 7;
	FETCH c INTO r;
	FETCH c INTO r;
	UPDATE cur_t SET v = 'updated' WHERE CURRENT OF c RETURNING * INTO r;
	RETURN NEXT 'updated ' || r.id || ' ' || r.v;
	CLOSE c;
	OPEN c FOR SELECT id, v || 'x' AS vx FROM cur_t WHERE id > 990;
	FETCH c INTO r;
	DELETE FROM cur_t WHERE CURRENT OF c RETURNING * INTO r;
	RETURN NEXT 'deleted ' || r.id || ' ' || r.v;
	CLOSE c;
	-- inheritance: the Append's current child scan
	OPEN c FOR SELECT * FROM cur_par WHERE id % 50 = 0;
	FETCH c INTO r;
	FETCH c INTO r;
	UPDATE cur_par SET v = 'updated' WHERE CURRENT OF c RETURNING * INTO r;
	RETURN NEXT 'updated ' || r.id || ' ' || r.v;
	FETCH c INTO r;
	DELETE FROM cur_chi2 WHERE CURRENT OF c RETURNING * INTO r;
	RETURN NEXT 'deleted ' || r.id || ' ' || r.v;
	CLOSE c;
	RETURN QUERY SELECT 'cur_t ' || count(*) || ' ' || string_agg(id || v, ',' ORDER BY id)
		FROM cur_t WHERE v = 'updated' OR id > 989;
	RETURN QUERY SELECT 'cur_par ' || count(*) || ' ' || string_agg(id || v, ',' ORDER BY id)
		FROM cur_par WHERE id % 50 = 0;
	RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'roll back';
EXCEPTION WHEN raise_exception THEN
	RETURN;
END
$$;
-- cur_run returns its rows before rolling back; both runs start from the same table
CREATE FUNCTION cur_results(forced bool) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	t text;
	acc text[] := '{}';
BEGIN
	BEGIN
		FOR t IN SELECT * FROM cur_run(forced) LOOP
			acc := acc || t;
		END LOOP;
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
	RETURN QUERY SELECT unnest(acc);
END
$$;
SELECT * FROM cur_results(true);
SELECT (SELECT array_agg(x) FROM cur_results(true) x) =
       (SELECT array_agg(x) FROM cur_results(false) x) AS cursor_updates_identical;
BEGIN;
SET LOCAL active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT * FROM cur_par WHERE id % 50 = 0;
COMMIT;

-- D. Cursors over a pushed-down scan are scrollable, as over a sequential
-- scan, and fetch backward the rows they returned.
CREATE FUNCTION scroll_run(forced bool) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	c refcursor := 'scroll_c';
	r record;
BEGIN
	PERFORM set_config('active_pg.enable', (forced)::text, true);
	PERFORM set_config('active_pg.force_pushdown', 'on', true);
	EXECUTE 'DECLARE scroll_c CURSOR FOR SELECT id, v FROM cur_t WHERE id % 100 = 7';
	RETURN QUERY SELECT 'scrollable ' || is_scrollable FROM pg_cursors WHERE name = 'scroll_c';
	FETCH c INTO r; RETURN NEXT 'next ' || r.id;
	FETCH c INTO r; RETURN NEXT 'next ' || r.id;
	FETCH PRIOR FROM c INTO r; RETURN NEXT 'prior ' || r.id;
	FETCH LAST FROM c INTO r; RETURN NEXT 'last ' || r.id;
	FETCH NEXT FROM c INTO r; RETURN NEXT 'past the end ' || coalesce(r.id::text, 'none');
	FETCH PRIOR FROM c INTO r; RETURN NEXT 'prior ' || r.id;
	FETCH ABSOLUTE 3 FROM c INTO r; RETURN NEXT 'absolute 3 ' || r.id;
	FETCH RELATIVE -10 FROM c INTO r; RETURN NEXT 'relative -10 ' || coalesce(r.id::text, 'none');
	FETCH NEXT FROM c INTO r; RETURN NEXT 'next ' || r.id;
	MOVE LAST IN c;
	FETCH PRIOR FROM c INTO r; RETURN NEXT 'prior ' || r.id;
	UPDATE cur_t SET v = 'scrolled' WHERE CURRENT OF c;
	RETURN QUERY SELECT 'now ' || id || ' ' || v FROM cur_t WHERE v = 'scrolled';
	CLOSE c;
	RAISE EXCEPTION 'undo';
EXCEPTION WHEN raise_exception THEN
	RETURN;
END
$$;
SELECT * FROM scroll_run(true);
SELECT (SELECT array_agg(x) FROM scroll_run(true) x) =
       (SELECT array_agg(x) FROM scroll_run(false) x) AS scrolling_identical;
-- SQL-level cursors, forward and backward over the whole result
BEGIN;
SET LOCAL active_pg.force_pushdown = on;
DECLARE c SCROLL CURSOR FOR SELECT id * 2 AS x FROM cur_t WHERE id < 6;
FETCH ALL FROM c;
FETCH BACKWARD ALL FROM c;
FETCH FORWARD 2 FROM c;
COMMIT;

-- E. String functions on text with an embedded NUL (corrupt, but readable):
-- PostgreSQL's length() stops at the NUL under UTF8; the disks hand such
-- values to the host.
CREATE TABLE nul_text (id int, t text);
CREATE CAST (bytea AS text) WITHOUT FUNCTION;
INSERT INTO nul_text VALUES (1, '\x61626364006566676869'::bytea::text),
	(2, '\x4142000043'::bytea::text), (3, 'plain');
DROP CAST (bytea AS text);
SELECT id, length(t), octet_length(t) FROM nul_text ORDER BY id;
SELECT ap_check('SELECT id, length(t) AS n FROM nul_text WHERE length(t) < 10');
SELECT ap_check('SELECT id, upper(t) AS u, lower(t) AS l FROM nul_text WHERE id > 0');
SELECT ap_check('SELECT id, substring(t, 2, 6) AS s FROM nul_text WHERE length(substring(t, 2)) >= 1');
SELECT ap_check($$SELECT id FROM nul_text WHERE t ILIKE 'ab%' OR t LIKE 'AB%'$$);
SELECT ap_check('SELECT id, octet_length(t) AS o, t || ''!'' AS c FROM nul_text WHERE octet_length(t) > 4');

-- F. A pushed-down scan counts in pg_stat_user_tables and pg_statio as the
-- sequential scan it replaces: scans, tuples read, blocks.
CREATE TABLE stat_t (id int, v text);
INSERT INTO stat_t SELECT g, 'v' || g FROM generate_series(1, 50000) g;
CREATE TEMP TABLE stat_snap (mode text, seq_scan bigint, tup_read bigint, blks bigint);
-- the counters of a statement reach the views when the backend goes idle:
-- pg_stat_force_next_flush() in its own statement, then read
CREATE FUNCTION stat_take(mode text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO stat_snap SELECT mode, s.seq_scan, s.seq_tup_read, io.heap_blks_read + io.heap_blks_hit
	FROM pg_stat_user_tables s JOIN pg_statio_user_tables io USING (relid)
	WHERE s.relname = 'stat_t';
$$;
SELECT pg_stat_force_next_flush();
SELECT stat_take('start');
SET active_pg.force_pushdown = on;
SELECT count(*) FROM stat_t WHERE id % 7 = 0;
SELECT sum(id) FROM stat_t WHERE id % 7 = 0 GROUP BY id % 2 ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT sum(id) FROM stat_t WHERE id % 7 = 0 GROUP BY id % 2;
SELECT pg_stat_force_next_flush();
SELECT stat_take('pushdown');
SET active_pg.enable = off;
SELECT count(*) FROM stat_t WHERE id % 7 = 0;
SELECT sum(id) FROM stat_t WHERE id % 7 = 0 GROUP BY id % 2 ORDER BY 1;
SELECT pg_stat_force_next_flush();
SELECT stat_take('stock');
RESET active_pg.enable;
RESET active_pg.force_pushdown;
SELECT p.seq_scan - s.seq_scan AS scans, p.tup_read - s.tup_read AS tuples,
	   (p.seq_scan - s.seq_scan) = (o.seq_scan - p.seq_scan) AS same_scans,
	   (p.tup_read - s.tup_read) = (o.tup_read - p.tup_read) AS same_tuples,
	   (p.blks - s.blks) = (o.blks - p.blks) AS same_blocks
FROM stat_snap s, stat_snap p, stat_snap o
WHERE s.mode = 'start' AND p.mode = 'pushdown' AND o.mode = 'stock';

DROP TABLE lat_small, lat_big, cur_t, cur_par, nul_text, stat_t CASCADE;
DROP FUNCTION cur_run(bool), cur_results(bool), scroll_run(bool), stat_take(text);
