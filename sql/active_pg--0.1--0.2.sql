/* active_pg--0.1--0.2.sql: 0.1 to 0.2 (CREATE EXTENSION installs 0.1 and runs this) */

-- complain if the script is sourced in psql rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION active_pg UPDATE TO '0.2'" to load this file. \quit

-- 0.1 granted the monitoring functions to pg_monitor but not the schema, so
-- its members got "permission denied for schema active_pg".
GRANT USAGE ON SCHEMA @extschema@ TO pg_monitor;

-- The cost model's machine constants, measured on this server: a host scan
-- and a disk scan of the same freshly written table shaped like a fact
-- table (integers, numerics, dates, a flag, text; the filter on a late
-- column, so that both sides decode most of each tuple, as analytic scans
-- do), and a scan of a one-row table for the disks' start.  By default the
-- table is half again as large as shared_buffers (up to 8 million rows,
-- about 1 GB): the host then reads it through the buffer manager from the
-- kernel's page cache, as it reads the large tables pushdown is for.  It changes no setting: it returns
-- the measured values with the ALTER SYSTEM statements that would apply
-- them (run them, e.g. with \gexec, then SELECT pg_reload_conf()).  Plans
-- then depend on the measured values, and on nothing a session ran.
CREATE FUNCTION calibrate(scan_rows int DEFAULT NULL, runs int DEFAULT 3,
	OUT setting text, OUT current_value float8, OUT measured float8, OUT statement text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE
SET max_parallel_workers_per_gather = 0
SET active_pg.enable_agg = off
SET active_pg.enable_bloom = off
AS $$
DECLARE
	-- the model's cost of one operator per tuple (extension/model.c,
	-- AP_NS_PER_OP): both scans below evaluate one comparison per tuple
	op_ns CONSTANT float8 := 15.0;
	big text := format('active_pg.calibrate_%s', pg_backend_pid());
	tiny text := format('active_pg.calibrate_tiny_%s', pg_backend_pid());
	plan json;
	node json;
	bytes float8;
	host_ns float8[] := '{}';
	disk_ns float8[] := '{}';
	start_ms float8[] := '{}';
BEGIN
	IF scan_rows IS NULL THEN
		-- about 130 bytes a row on disk
		SELECT least(greatest(1.5 * s.setting::float8 * 8192 / 130, 200000), 8000000)::int
			INTO scan_rows FROM pg_settings s WHERE s.name = 'shared_buffers';
	END IF;
	IF scan_rows < 10000 OR scan_rows > 100000000 OR runs < 1 OR runs > 100 THEN
		RAISE EXCEPTION 'active_pg.calibrate: scan_rows must be in 10000..100000000 and runs in 1..100'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	EXECUTE format('CREATE UNLOGGED TABLE %s (id int, part int, supp int, qty numeric(15,2), '
				   'price numeric(15,2), disc numeric(15,2), flag char(1), shipped date, '
				   'received date, mode char(10), note varchar(44))', big);
	EXECUTE format('INSERT INTO %s SELECT g, g %% 20000, g %% 1000, g %% 50 + 1, (g %% 100000) / 10.0, '
				   '(g %% 11) / 100.0, chr(65 + g %% 3), date ''1995-01-01'' + g %% 2500, '
				   'date ''1995-01-10'' + g %% 2500, ''MAIL'', md5(g::text) '
				   'FROM generate_series(1, %s) g', big, scan_rows);
	EXECUTE format('CREATE UNLOGGED TABLE %s (a int)', tiny);
	EXECUTE format('INSERT INTO %s VALUES (1)', tiny);
	EXECUTE format('ANALYZE %s', big);
	EXECUTE format('ANALYZE %s', tiny);
	CHECKPOINT;
	bytes := pg_relation_size(big);
	-- a first scan each way: page cache and shared buffers warm, hint bits set
	PERFORM set_config('active_pg.enable', 'off', true);
	EXECUTE format('SELECT count(*) FROM %s WHERE received < date ''1900-01-01''', big);
	FOR i IN 1..runs LOOP
		PERFORM set_config('active_pg.enable', 'off', true);
		PERFORM set_config('active_pg.force_pushdown', 'off', true);
		EXECUTE format('EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT count(*) FROM %s '
					   'WHERE received < date ''1900-01-01''', big)
			INTO plan;
		host_ns := host_ns || (((plan->0->>'Execution Time')::float8 * 1e6 - scan_rows * op_ns) / bytes);
		PERFORM set_config('active_pg.enable', 'on', true);
		PERFORM set_config('active_pg.force_pushdown', 'on', true);
		EXECUTE format('EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT id FROM %s '
					   'WHERE received < date ''1900-01-01''', big)
			INTO plan;
		node := plan->0->'Plan';
		IF node->>'Custom Plan Provider' IS DISTINCT FROM 'ActiveScan' OR
			coalesce((node->>'Disk Bytes Read')::float8, 0) <= 0 THEN
			RAISE EXCEPTION 'active_pg.calibrate: the disk scan did not run at the disks'
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  HINT = 'Check SELECT * FROM active_pg.disks().';
		END IF;
		disk_ns := disk_ns || (((node->>'Disk CPU Time')::float8 * 1e6 - scan_rows * op_ns) /
							   (node->>'Disk Bytes Read')::float8);
		EXECUTE format('EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT a FROM %s WHERE a = -1', tiny)
			INTO plan;
		start_ms := start_ms || ((plan->0->>'Execution Time')::float8 /
								 greatest((plan->0->'Plan'->>'Disks')::int, 1));
	END LOOP;
	EXECUTE format('DROP TABLE %s, %s', big, tiny);

	-- the medians, each with the statement that would apply it
	RETURN QUERY
	SELECT m.name, current_setting(m.name)::float8, r.v,
		format('ALTER SYSTEM SET %s = %s', m.name, r.v)
	FROM (VALUES (1, 'active_pg.disk_scan_ns_per_byte', disk_ns),
				 (2, 'active_pg.host_scan_ns_per_byte', host_ns),
				 (3, 'active_pg.disk_start_ms', start_ms)) AS m(n, name, xs),
		LATERAL (SELECT round(greatest(percentile_cont(0.5) WITHIN GROUP (ORDER BY x), 0.001)::numeric,
							  3)::float8 AS v
				 FROM unnest(m.xs) x) r
	ORDER BY m.n;
END
$$;

COMMENT ON FUNCTION calibrate(int, int) IS 'measures the cost model''s machine constants on this server';

-- it writes and scans a table: for administrators
REVOKE ALL ON FUNCTION calibrate(int, int) FROM PUBLIC;
