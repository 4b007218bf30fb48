-- The host's interconnect emulation (active_pg.interconnect_mb_per_sec: a token
-- bucket in the receive path of every disk scan, model.c): a scan that ships
-- a known number of bytes through it runs at the set rate.  Benchmark-style:
-- about 16 MB of pages (the distributed-device mode ships every page) at
-- 4 MB/s, so about 4 seconds; the measured rate must be within 10% of the
-- set rate, and the same scan unthrottled several times faster (the bucket,
-- not the machine, is what limits).  The bucket's depth (50 ms) and the last
-- unpaid socket read are about 3% of the bytes.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE ic (id int, pad text);
INSERT INTO ic SELECT g, repeat('x', 200) FROM generate_series(1, 70000) g;
VACUUM (ANALYZE) ic;

-- elapsed seconds and bytes the disks shipped for one forced scan of ic
-- and the seconds the disks (summed) were blocked on the host taking it
CREATE FUNCTION ic_scan(OUT seconds float8, OUT bytes float8, OUT disk_wait float8)
LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF, FORMAT JSON) SELECT count(*) FROM ic WHERE id < 0'
		INTO plan;
	seconds := (plan->0->>'Execution Time')::float8 / 1000.0;
	bytes := (plan->0->'Plan'->'Plans'->0->>'Interconnect Bytes Shipped')::float8;
	disk_wait := (plan->0->'Plan'->'Plans'->0->>'Disk Wait For Host Time')::float8 / 1000.0;
END $$;

SET active_pg.force_pushdown = on;
SET active_pg.scan_mode = 'pages';
SET active_pg.interconnect_mb_per_sec = 4;
CREATE TEMP TABLE throttled AS SELECT * FROM ic_scan();
RESET active_pg.interconnect_mb_per_sec;
CREATE TEMP TABLE free AS SELECT * FROM ic_scan();
RESET active_pg.scan_mode;
RESET active_pg.force_pushdown;

SELECT t.bytes > 15 * 1024 * 1024 AS enough_bytes,
	CASE WHEN t.bytes / t.seconds / (1024 * 1024) BETWEEN 4 * 0.9 AND 4 * 1.1 THEN 'within 10%'
		ELSE format('%s MB/s', round((t.bytes / t.seconds / (1024 * 1024))::numeric, 2)) END
		AS throttled_rate,
	CASE WHEN f.seconds * 4 < t.seconds THEN 'faster'
		ELSE format('%s s vs %s s', round(f.seconds::numeric, 3), round(t.seconds::numeric, 3)) END
		AS unthrottled,
	-- the disks spent the throttled scan blocked on the host, and say so
	CASE WHEN t.disk_wait > 0.5 * t.seconds THEN 'disks waited'
		ELSE format('%s s of %s s', round(t.disk_wait::numeric, 3), round(t.seconds::numeric, 3)) END
		AS disk_wait
FROM throttled t, free f;

DROP TABLE ic;
DROP FUNCTION ic_scan();
