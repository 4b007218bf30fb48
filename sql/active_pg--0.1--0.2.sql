/* active_pg--0.1--0.2.sql: ALTER EXTENSION active_pg UPDATE TO '0.2' */

-- complain if the script is sourced in psql rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION active_pg UPDATE TO '0.2'" to load this file. \quit

-- 0.1 granted the monitoring functions to pg_monitor but not the schema, so
-- its members got "permission denied for schema active_pg".
GRANT USAGE ON SCHEMA @extschema@ TO pg_monitor;
