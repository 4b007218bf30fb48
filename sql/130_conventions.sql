-- What a PostgreSQL extension owes its users: monitoring roles can read the
-- monitoring functions, ordinary roles cannot change what the shared disks
-- do, settings take units, and a 0.1 installation upgrades to the current
-- version with the same objects as a fresh one.

-- a member of pg_monitor (not a superuser) reads the disks' state
CREATE ROLE ap_monitor LOGIN;
GRANT pg_monitor TO ap_monitor;
CREATE ROLE ap_plain LOGIN;
SET ROLE ap_monitor;
SELECT count(*) AS disks, bool_and(alive) AS alive FROM active_pg.disks();
SELECT count(*) AS disks FROM active_pg.disk_stats WHERE scans IS NOT NULL;
-- what the backends saw of each disk, and the blocks the host read itself
SELECT count(*) AS disks FROM active_pg.disks() WHERE failures IS NOT NULL;
SELECT cause, events >= 0 AND bytes = blocks * 8192 AS counted
FROM active_pg.host_fallback_stats ORDER BY cause;
RESET ROLE;
-- an ordinary role may not
SET ROLE ap_plain;
SELECT count(*) FROM active_pg.disks();
SELECT count(*) FROM active_pg.host_fallback_stats;
SELECT active_pg.host_fallback_stats_reset();
RESET ROLE;
-- a superuser resets the host's fallback counters
SELECT active_pg.host_fallback_stats_reset();
SELECT sum(events) AS events, sum(blocks) AS blocks, bool_and(stats_reset > now() - '1 min'::interval) AS just_reset
FROM active_pg.host_fallback_stats;

-- settings that act on the shared daemons are not an ordinary role's to set
SET ROLE ap_plain;
SET active_pg.direct_io = on;
SET active_pg.queue_depth = 4;
SET active_pg.batch_size = '64kB';
SET active_pg.disk_agg_mem = '1MB';
SET active_pg.stripe_pages = 8;
SET active_pg.scan_mode = 'pages';
-- ... the disks' emulation is the server's, not a session's
SET active_pg.disk_cpu_ratio = 0.5;
SET active_pg.disk_memory = '64MB';
-- ... but the planner's and the session's own settings are
SET active_pg.enable = off;
SET active_pg.force_pushdown = on;
SET active_pg.connect_timeout = '2s';
SET active_pg.interconnect_mb_per_sec = 100;
RESET ROLE;
RESET ALL;

-- memory, size and time settings take units
SET active_pg.disk_agg_mem = '64MB';
SHOW active_pg.disk_agg_mem;
SET active_pg.batch_size = '1MB';
SHOW active_pg.batch_size;
SET active_pg.bloom_max_bytes = '256kB';
SHOW active_pg.bloom_max_bytes;
SET active_pg.connect_timeout = '2s';
SHOW active_pg.connect_timeout;
SET active_pg.disk_timeout = '1min';
SHOW active_pg.disk_timeout;
-- (out of range: the message's wording differs between PostgreSQL majors)
DO $$
BEGIN
	SET active_pg.batch_size = '4kB';
EXCEPTION WHEN invalid_parameter_value THEN
	RAISE NOTICE 'refused: %', SQLSTATE;
END $$;
SET active_pg.stripe_pages = 3;
RESET ALL;

-- every setting is documented with its unit and context
SELECT name, unit, context, vartype FROM pg_settings
WHERE name LIKE 'active_pg.%' ORDER BY name;

-- upgrade: 0.1, updated, has the objects of a fresh installation
CREATE DATABASE ap_upgrade;
\c ap_upgrade
-- the library plans only where the extension is created: not before, at
-- once after CREATE EXTENSION in the same session, and not after DROP
-- EXTENSION, which leaves the schema behind
CREATE TABLE ext_t AS SELECT g AS id FROM generate_series(1, 1000) g;
ANALYZE ext_t;
SET active_pg.force_pushdown = on;
EXPLAIN (COSTS OFF) SELECT id FROM ext_t WHERE id = 7;
CREATE EXTENSION active_pg VERSION '0.1';
EXPLAIN (COSTS OFF) SELECT id FROM ext_t WHERE id = 7;
SELECT has_schema_privilege('pg_monitor', 'active_pg', 'USAGE') AS usage_01;
ALTER EXTENSION active_pg UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'active_pg';
SELECT has_schema_privilege('pg_monitor', 'active_pg', 'USAGE') AS usage_02;
SELECT pg_describe_object(classid, objid, objsubid) AS member
FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	AND classid <> 'pg_type'::regclass	-- (PostgreSQL 18 lists a view's row types too)
	AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'active_pg')
ORDER BY 1;
-- DROP EXTENSION removes the objects; the schema CREATE EXTENSION made for
-- them (the control file names it) stays, as with every extension that names
-- its schema, until it is dropped too
DROP EXTENSION active_pg;
SELECT count(*) AS objects_left FROM pg_proc WHERE pronamespace = 'active_pg'::regnamespace;
EXPLAIN (COSTS OFF) SELECT id FROM ext_t WHERE id = 7;
DROP SCHEMA active_pg;
\c contrib_regression
DROP DATABASE ap_upgrade;
DROP ROLE ap_monitor;
DROP ROLE ap_plain;
