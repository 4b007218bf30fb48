-- Prepared statements (custom and generic plans), parameters shipped as
-- constants at execution, rescans under a nested loop, cursors.
SET active_pg.force_pushdown = on;
SET active_pg.stripe_pages = 4;
CREATE TABLE pr (id int, k int, t text, d date);
INSERT INTO pr SELECT g, g % 50, 't' || (g % 7), date '2000-01-01' + g % 365 FROM generate_series(1, 20000) g;
ANALYZE pr;

PREPARE q1(int, text) AS SELECT count(*), min(id), max(id) FROM pr WHERE k = $1 AND t = $2;
SET plan_cache_mode = force_custom_plan;
EXECUTE q1(3, 't3');
EXPLAIN (COSTS OFF) EXECUTE q1(3, 't3');
SET plan_cache_mode = force_generic_plan;
EXECUTE q1(3, 't3');
EXECUTE q1(4, 't4');
EXECUTE q1(NULL, 't4');
EXPLAIN (COSTS OFF) EXECUTE q1(3, 't3');
SET active_pg.enable = off;
EXECUTE q1(3, 't3');
EXECUTE q1(4, 't4');
RESET active_pg.enable;

PREPARE q2(date) AS SELECT count(*) FROM pr WHERE d >= $1 AND d < $1 + 30;
EXECUTE q2('2000-03-01');
EXECUTE q2('2000-12-01');
SET active_pg.enable = off;
EXECUTE q2('2000-03-01');
EXECUTE q2('2000-12-01');
RESET active_pg.enable;
RESET plan_cache_mode;

-- a stable function's value is computed once on the host and shipped
SELECT ap_check('SELECT id FROM pr WHERE d < current_date - 9000');

-- parameterized rescans: the inner ActiveScan is re-shipped with each outer value
CREATE TABLE outer_keys (k int);
INSERT INTO outer_keys VALUES (1), (2), (49), (NULL);
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT o.k, (SELECT count(*) FROM pr WHERE pr.k = o.k) FROM outer_keys o ORDER BY 1;
SELECT o.k, (SELECT count(*) FROM pr WHERE pr.k = o.k) FROM outer_keys o ORDER BY 1;
SET active_pg.enable = off;
SELECT o.k, (SELECT count(*) FROM pr WHERE pr.k = o.k) FROM outer_keys o ORDER BY 1;
RESET active_pg.enable;
SELECT count(*) FROM outer_keys o JOIN pr ON pr.k = o.k;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- cursors: partial fetches, then close
BEGIN;
DECLARE cur CURSOR FOR SELECT id FROM pr WHERE k = 5 ORDER BY id;
FETCH 3 FROM cur;
CLOSE cur;
DECLARE cur2 NO SCROLL CURSOR FOR SELECT id % 50 = 6 AS k_is_6 FROM pr WHERE k = 6;
FETCH 2 FROM cur2;
COMMIT;

-- LIMIT stops early; the next query works
SELECT count(*) FROM (SELECT id FROM pr WHERE k < 40 LIMIT 5) s;
SELECT count(*) FROM pr WHERE k < 40;

-- a rescanned node reuses the backend's connections: after the first
-- execution, every rescan takes the connection the previous one kept
CREATE FUNCTION explain_analyze_json(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO j;
	RETURN j;
END $$;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
WITH e AS (SELECT explain_analyze_json($q$
	SELECT o, (SELECT count(*) FROM pr WHERE pr.k = o) FROM generate_series(1, 30) o
$q$) AS j)
SELECT (jsonb_path_query_first(j, '$.**."Disk Connections Opened"'))::int <= 4 AS opened_at_most_once,
       (jsonb_path_query_first(j, '$.**."Disk Connections Opened"'))::int +
       (jsonb_path_query_first(j, '$.**."Disk Connections Reused"'))::int AS connections
FROM e;
-- rows this transaction wrote just before (in dirty buffers) are seen by
-- the first execution and by every rescan, which flush only once
BEGIN;
UPDATE pr SET k = k + 1000 WHERE id % 10 = 0;
SELECT o, (SELECT count(*) FROM pr WHERE pr.k = o) FROM generate_series(1000, 1045, 15) o;
SET LOCAL active_pg.enable = off;
SELECT o, (SELECT count(*) FROM pr WHERE pr.k = o) FROM generate_series(1000, 1045, 15) o;
ROLLBACK;
-- the session's next query starts from the kept connections too
WITH e AS (SELECT explain_analyze_json('SELECT count(*) FROM pr WHERE k = 5') AS j)
SELECT jsonb_path_query_first(j, '$.**."Disk Connections Opened"') AS opened,
       jsonb_path_query_first(j, '$.**."Disk Connections Reused"') AS reused
FROM e;
-- a rescan compiles nothing: the Params shipped with each rescan are
-- evaluated once, not JIT-compiled for every rescan (on a server with JIT;
-- without it both counts are 0)
SET jit = on;
SET jit_above_cost = 0;
SET jit_inline_above_cost = -1;
SET jit_optimize_above_cost = -1;
WITH e AS (SELECT explain_analyze_json($q$
	SELECT o, (SELECT max(id) FROM pr WHERE pr.k = o),
	       (SELECT id FROM pr WHERE pr.id = o * 7)
	FROM generate_series(1, 2) o
$q$) AS few, explain_analyze_json($q$
	SELECT o, (SELECT max(id) FROM pr WHERE pr.k = o),
	       (SELECT id FROM pr WHERE pr.id = o * 7)
	FROM generate_series(1, 40) o
$q$) AS many)
SELECT coalesce((jsonb_path_query_first(few, '$.**."Functions"'))::int, 0) =
       coalesce((jsonb_path_query_first(many, '$.**."Functions"'))::int, 0)
       AS jit_functions_independent_of_rescans
FROM e;
-- and the rescans under JIT return what stock returns
SELECT ap_check($q$
	SELECT o, (SELECT max(id) FROM pr WHERE pr.k = o),
	       (SELECT id FROM pr WHERE pr.id = o * 7)
	FROM generate_series(1, 40) o
$q$);
RESET jit;
RESET jit_above_cost;
RESET jit_inline_above_cost;
RESET jit_optimize_above_cost;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
DROP FUNCTION explain_analyze_json(text);
