/* active_pg--0.1.sql */

-- complain if the script is sourced in psql rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION active_pg" to load this file. \quit

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
