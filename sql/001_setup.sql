-- Setup shared by the regression tests: the extension and ap_check(), which
-- runs a query with pushdown forced and with active_pg.enable = off and fails
-- unless both return the same multiset of rows (and the forced run really
-- used ActiveScan or ActiveAgg; with node given, that node).
CREATE EXTENSION active_pg;

CREATE FUNCTION ap_check(q text, expect_push bool DEFAULT true, node text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	pushed bool := false;
	n_on bigint;
	n_off bigint;
	extra bigint;
	missing bigint;
BEGIN
	PERFORM set_config('active_pg.enable', 'on', true);
	PERFORM set_config('active_pg.force_pushdown', 'on', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF line LIKE '%' || coalesce(node, 'ActiveScan') || '%' OR
			(node IS NULL AND line LIKE '%ActiveAgg%') THEN
			pushed := true;
		END IF;
	END LOOP;
	EXECUTE 'CREATE TEMP TABLE ap_on AS ' || q;
	PERFORM set_config('active_pg.enable', 'off', true);
	EXECUTE 'CREATE TEMP TABLE ap_off AS ' || q;
	PERFORM set_config('active_pg.enable', 'on', true);
	PERFORM set_config('active_pg.force_pushdown', 'off', true);
	SELECT count(*) INTO n_on FROM ap_on;
	SELECT count(*) INTO n_off FROM ap_off;
	SELECT count(*) INTO extra FROM (SELECT * FROM ap_on EXCEPT ALL SELECT * FROM ap_off) x;
	SELECT count(*) INTO missing FROM (SELECT * FROM ap_off EXCEPT ALL SELECT * FROM ap_on) x;
	DROP TABLE ap_on;
	DROP TABLE ap_off;
	IF n_on <> n_off OR extra <> 0 OR missing <> 0 THEN
		RAISE EXCEPTION 'pushdown result differs for %: % rows with pushdown, % without, % extra, % missing',
			q, n_on, n_off, extra, missing;
	END IF;
	IF pushed <> expect_push THEN
		RAISE EXCEPTION 'expected pushdown = % (%) for %', expect_push,
			coalesce(node, 'ActiveScan or ActiveAgg'), q;
	END IF;
	RETURN n_on || ' rows';
END
$$;

-- The disks are up (launched by the background worker) and answer.
SELECT count(*) AS disks, bool_and(alive) AS all_alive FROM active_pg.disks();

-- EXPLAIN's text lines in one form on every supported PostgreSQL (15's):
-- 17 names an init-plan's value "(InitPlan 1).col1" where 15 says "$0",
-- leaves out "(returns $0)" and "Params Evaluated: $0", and writes a hashed
-- subplan test as "(ANY (x = (hashed SubPlan 1).col1))"; 18 prints row
-- counts with two decimals ("rows=12.00") and, in JSON, "Disabled": false
-- for every node.  Plans whose init-plans each return one value, which is
-- all these tests show.
CREATE FUNCTION ap_explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	l text;
	m text[];
BEGIN
	FOR l IN EXECUTE q LOOP
		CONTINUE WHEN l ~ '^\s*Params Evaluated: ';
		l := regexp_replace(l, '\(ANY \([^()]* = \((hashed SubPlan \d+)\)\.col1\)\)', '(\1)', 'g');
		LOOP
			m := regexp_match(l, '\(InitPlan (\d+)\)\.col1');
			EXIT WHEN m IS NULL;
			l := replace(l, '(InitPlan ' || m[1] || ').col1', '$' || (m[1]::int - 1));
		END LOOP;
		l := regexp_replace(l, '^(\s*InitPlan \d+) \(returns \$\d+\)$', '\1');
		l := regexp_replace(l, '(rows=\d+)\.00\M', '\1', 'g');
		l := regexp_replace(l, '\n\s*"Disabled": false,', '', 'g');
		RETURN NEXT l;
	END LOOP;
END $$;

-- A collation that PostgreSQL does not treat as C (only "C" and "POSIX" are),
-- on every supported build: libc's C.UTF-8 (ICU, which the PostgreSQL 18
-- test installation lacks, is not needed).
CREATE COLLATION ap_not_c (provider = libc, locale = 'C.UTF-8');
