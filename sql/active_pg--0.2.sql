/* active_pg--0.2.sql: the objects of version 0.2, for CREATE EXTENSION */

-- complain if the script is sourced in psql rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION active_pg" to load this file. \quit

-- The functions below are granted to pg_monitor; the schema must let its
-- members reach them.
GRANT USAGE ON SCHEMA @extschema@ TO pg_monitor;

-- One row per configured disk: does it answer the handshake now, and what is it?
CREATE FUNCTION disks(
	OUT disk int,
	OUT address text,
	OUT alive bool,
	OUT disk_id int,
	OUT version text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'active_pg_disks_info'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION disks() IS 'active_pg disk daemons and whether they answer';

-- connecting to the disks is for administrators and monitoring roles only
REVOKE ALL ON FUNCTION disks() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION disks() TO pg_monitor;

-- Cumulative counters of each disk since it started (StatsRequest), plus the
-- launcher's restart count.  A disk that does not answer has NULL counters.
CREATE FUNCTION disk_stats_fn(
	OUT disk int,
	OUT address text,
	OUT alive bool,
	OUT scans bigint,
	OUT pages_read bigint,
	OUT bytes_read bigint,
	OUT bytes_shipped bigint,
	OUT tuples_seen bigint,
	OUT tuples_passed bigint,
	OUT fallbacks bigint,
	OUT xids_resolved bigint,
	OUT bloom_dropped bigint,
	OUT busy_ms float8,
	OUT throttle_ms float8,
	OUT uptime_s float8,
	OUT restarts bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'active_pg_disk_stats'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW disk_stats AS SELECT * FROM disk_stats_fn();

COMMENT ON VIEW disk_stats IS 'active_pg per-disk cumulative statistics';

REVOKE ALL ON FUNCTION disk_stats_fn() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION disk_stats_fn() TO pg_monitor;
REVOKE ALL ON disk_stats FROM PUBLIC;
GRANT SELECT ON disk_stats TO pg_monitor;
