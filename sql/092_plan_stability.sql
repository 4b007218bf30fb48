-- Plans do not depend on what the session ran before: the same query, the
-- same statistics and settings give the same plan in a fresh session, in
-- that session after it ran the queries and others (among them a long IN
-- list over a substring, the scan that once taught a learning model to
-- push nothing down for the rest of the session, and a correlated subquery
-- that rescans), and in a new session.  The defaults, parallel workers
-- allowed; the plans include pushdown (ActiveAgg, an ActiveScan with a
-- Bloom filter) and PostgreSQL's own.  The model's core count is pinned so
-- that the plans shown do not depend on the machine (in both sessions).
SET active_pg.host_cores = 2;
CREATE TABLE ps_fact (id int, k int, v numeric, zip text, note text);
INSERT INTO ps_fact SELECT g, g % 1000, g % 97, lpad(((g * 7919) % 99991)::text, 5, '0'), 'n' || g
	FROM generate_series(1, 200000) g;
CREATE TABLE ps_dim (k int PRIMARY KEY, name text);
INSERT INTO ps_dim SELECT g, 'k' || g FROM generate_series(0, 999) g;
ANALYZE ps_fact;
ANALYZE ps_dim;

CREATE TABLE ps_queries (n int PRIMARY KEY, q text);
INSERT INTO ps_queries VALUES
	(1, 'SELECT k % 10, count(*), sum(v) FROM ps_fact GROUP BY 1'),
	(2, 'SELECT count(*) FROM ps_fact f JOIN ps_dim d USING (k) WHERE d.name LIKE ''k12%'''),
	(3, 'SELECT id, v FROM ps_fact WHERE v > 90 ORDER BY id DESC LIMIT 3'),
	(4, 'SELECT f.id, d.name FROM ps_fact f JOIN ps_dim d USING (k) WHERE f.id < 5'),
	(5, 'SELECT d.k, (SELECT count(*) FROM ps_fact f WHERE f.k = d.k AND f.v = 1) FROM ps_dim d WHERE d.k < 3');
CREATE TABLE ps_plans (n int, phase text, plan text);
CREATE FUNCTION ps_record(phase text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT n, q FROM ps_queries ORDER BY n LOOP
		INSERT INTO ps_plans
			SELECT r.n, phase, string_agg(l, E'\n')
			FROM ap_explain('EXPLAIN (COSTS OFF) ' || r.q) l;
	END LOOP;
END $$;

SELECT ps_record('fresh');
-- the queries, then others
SELECT k % 10 AS g, count(*), sum(v) FROM ps_fact GROUP BY 1 ORDER BY 1 LIMIT 2;
SELECT count(*) FROM ps_fact f JOIN ps_dim d USING (k) WHERE d.name LIKE 'k12%';
SELECT id, v FROM ps_fact WHERE v > 90 ORDER BY id DESC LIMIT 3;
SELECT f.id, d.name FROM ps_fact f JOIN ps_dim d USING (k) WHERE f.id < 5 ORDER BY 1;
SELECT d.k, (SELECT count(*) FROM ps_fact f WHERE f.k = d.k AND f.v = 1) FROM ps_dim d
	WHERE d.k < 3 ORDER BY 1;
SELECT count(*) FROM ps_fact WHERE substring(zip, 1, 5) IN (
	SELECT lpad(g::text, 5, '0') FROM generate_series(0, 399) g);
SELECT string_agg(quote_literal(lpad(g::text, 5, '0')), ', ') AS zips
	FROM generate_series(0, 399) g \gset
SELECT count(*) FROM ps_fact WHERE substring(zip, 1, 5) IN (:zips);
SELECT count(*) FROM ps_fact
	WHERE substring(zip, 1, 5) = ANY (ARRAY(SELECT lpad(g::text, 5, '0') FROM generate_series(0, 399) g));
SELECT count(*) FROM ps_fact f WHERE f.v > (SELECT avg(v) FROM ps_fact g WHERE g.k = f.k AND g.id < 300)
	AND f.id < 50;
SELECT ps_record('after');
\c
SET active_pg.host_cores = 2;
SELECT ps_record('new session');

-- one plan per query across the three phases, and the pushdown among them
SELECT n, count(*) AS phases, count(DISTINCT plan) AS plans,
	bool_or(plan LIKE '%ActiveAgg%' OR plan LIKE '%ActiveScan%') AS pushed
FROM ps_plans GROUP BY n ORDER BY n;
SELECT plan FROM ps_plans WHERE phase = 'fresh' ORDER BY n;
-- and each query's rows, pushed down (forced) and on the host, agree
SELECT n, ap_check(q) FROM ps_queries ORDER BY n;

DROP FUNCTION ps_record(text);
DROP TABLE ps_plans, ps_queries, ps_fact, ps_dim;
