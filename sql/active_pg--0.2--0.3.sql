/* active_pg--0.2--0.3.sql: 0.2 to 0.3 (CREATE EXTENSION installs 0.1 and runs 0.1--0.2, then this) */

-- complain if the script is sourced in psql rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION active_pg UPDATE TO '0.3'" to load this file. \quit

-- disks() also says what the backends saw of each disk: until when a
-- backend keeps it in quarantine (NULL if none does now), how often it
-- failed, and the last failure's reason and time (shared memory: NULL
-- without shared_preload_libraries).
DROP FUNCTION disks();
CREATE FUNCTION disks(
	OUT disk int,
	OUT address text,
	OUT alive bool,
	OUT disk_id int,
	OUT version text,
	OUT quarantined_until timestamptz,
	OUT failures bigint,
	OUT last_failure text,
	OUT last_failure_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'active_pg_disks_info'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION disks() IS 'active_pg disk daemons, whether they answer, their failures and quarantine';

REVOKE ALL ON FUNCTION disks() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION disks() TO pg_monitor;

-- Blocks the host read itself, unfiltered, by cause, since the last reset:
-- disk_failed_mid_scan (the rest of a disk that failed after delivering
-- part), disk_unreachable (a disk that failed before delivering anything),
-- disk_quarantined (a disk skipped because it failed recently),
-- all_disks_failed (scans whose every disk failed: their relation's blocks,
-- also counted under the causes above), handed_back (blocks and tuples a
-- disk could not decide: visibility, checksums), pages_mode (pages shipped
-- to the host, scan_mode = 'pages').
CREATE FUNCTION host_fallback_stats_fn(
	OUT cause text,
	OUT events bigint,
	OUT blocks bigint,
	OUT bytes bigint,
	OUT tuples bigint,
	OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'active_pg_host_fallback_stats'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW host_fallback_stats AS SELECT * FROM host_fallback_stats_fn();

COMMENT ON VIEW host_fallback_stats IS 'active_pg blocks the host read itself, unfiltered, by cause';

REVOKE ALL ON FUNCTION host_fallback_stats_fn() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION host_fallback_stats_fn() TO pg_monitor;
REVOKE ALL ON host_fallback_stats FROM PUBLIC;
GRANT SELECT ON host_fallback_stats TO pg_monitor;

-- Zero the counters of host_fallback_stats (superusers, and roles granted it).
CREATE FUNCTION host_fallback_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'active_pg_host_fallback_stats_reset'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION host_fallback_stats_reset() FROM PUBLIC;
