-- Range checks decided on raw tuples before the filter (diskd/prefilter.h):
-- the leading comparisons of integer-like and numeric columns with
-- constants (two on a column merged into one range, date against timestamp
-- converted to days) or of integer-like columns with another of their kind.
-- Every query runs with pushdown forced and with active_pg off (ap_check)
-- over rows the disk's walk can measure and rows it must leave to the full
-- path: NULLs, 4-byte varlena headers, TOAST pointers, a dropped column,
-- rows written before a column was added, infinities, dates beyond the
-- timestamp range.
SET client_min_messages = warning;
CREATE TABLE pf (id int, i2 int2, n numeric, gone int4, d date, t text,
	ts timestamp, i4 int4, tz timestamptz, i8 int8);
ALTER TABLE pf ALTER t SET STORAGE EXTERNAL;
INSERT INTO pf
SELECT g,
	CASE WHEN g % 97 = 0 THEN 32767 WHEN g % 89 = 0 THEN -32768 ELSE g % 200 - 100 END,
	g / 7.0,
	g,
	CASE WHEN g % 53 = 0 THEN 'infinity'::date WHEN g % 59 = 0 THEN '-infinity'::date
		WHEN g % 61 = 0 THEN '5874897-12-31'::date ELSE date '1994-01-01' + (g % 800 - 400) END,
	CASE WHEN g % 101 = 0 THEN repeat(md5(g::text), 100)	-- out of line (EXTERNAL)
		ELSE repeat('x', g % 150) END,							-- 4-byte header from 127 bytes
	CASE WHEN g % 67 = 0 THEN 'infinity'::timestamp
		ELSE timestamp '1994-06-01' + g * interval '7 hours' END,
	g * 1000 - 1500000,
	timestamptz '1994-06-01 00:00+00' + g * interval '5 hours',
	CASE WHEN g % 71 = 0 THEN 9223372036854775807 WHEN g % 73 = 0 THEN -9223372036854775808
		ELSE g::int8 * 3000000000 END
FROM generate_series(1, 3000) g;
-- NULLs in every column now and then
UPDATE pf SET i2 = NULL WHERE id % 31 = 0;
UPDATE pf SET d = NULL WHERE id % 37 = 0;
UPDATE pf SET ts = NULL, i8 = NULL WHERE id % 41 = 0;
UPDATE pf SET n = NULL WHERE id % 43 = 0;
ALTER TABLE pf DROP COLUMN gone;
ALTER TABLE pf ADD COLUMN late date;
INSERT INTO pf (id, i2, n, d, t, ts, i4, tz, i8, late)
SELECT g, g % 300 - 150, g / 3.0, date '1994-06-01' + g % 500, repeat('y', g % 40),
	timestamp '1994-01-01' + g * interval '11 hours', g, timestamptz '1995-01-01 00:00+00',
	g, date '1994-01-01' + g % 365
FROM generate_series(3001, 4000) g;
VACUUM ANALYZE pf;
RESET client_min_messages;

-- Each comparison of a column with constants around its edges, every operator.
CREATE FUNCTION pf_matrix(col text, consts text[], tab text DEFAULT 'pf') RETURNS SETOF text
LANGUAGE sql AS $$
	SELECT format('%s %s %s: %s', col, op, c,
		ap_check(format('SELECT id FROM %s WHERE %s %s %s', tab, col, op, c)))
	FROM unnest(consts) WITH ORDINALITY AS cs(c, i),
		unnest(ARRAY['<', '<=', '=', '<>', '>', '>=']) WITH ORDINALITY AS ops(op, j)
	ORDER BY i, j
$$;
SELECT * FROM pf_matrix('i2', ARRAY['0', '-100', '32767', '-32768', '100000', '-100000::int8']);
SELECT * FROM pf_matrix('i4', ARRAY['0', '-1500000', '2147483647', '-2147483648::int8']);
SELECT * FROM pf_matrix('i8', ARRAY['3000000000', '9223372036854775807', '-9223372036854775808']);
SELECT * FROM pf_matrix('d', ARRAY['date ''1994-01-01''', 'date ''infinity''', 'date ''-infinity''',
	'timestamp ''1994-01-01 00:00''', 'timestamp ''1994-01-01 12:00''',
	'timestamp ''1993-12-31 23:59:59.999999''', 'timestamp ''infinity''',
	'timestamp ''-infinity''', 'timestamp ''294276-12-31 00:00''']);
SELECT * FROM pf_matrix('ts', ARRAY['timestamp ''1994-09-01 07:00''', 'date ''1994-09-01''',
	'timestamp ''infinity''']);
SELECT * FROM pf_matrix('late', ARRAY['date ''1994-06-01''']);
-- Two columns of one kind (TPC-H Q12's l_commitdate < l_receiptdate).
SELECT * FROM pf_matrix('late', ARRAY['d']);
SELECT * FROM pf_matrix('d', ARRAY['late', 'd']);
SELECT * FROM pf_matrix('i8', ARRAY['i8']);
SELECT ap_check('SELECT id FROM pf WHERE d < late AND late < date ''1994-09-01'' AND i2 <> 0');

-- Two comparisons on one column merge into one range (TPC-H Q6's l_shipdate).
SELECT ap_check('SELECT id FROM pf WHERE d >= date ''1994-01-01'' AND d < date ''1994-01-01'' + interval ''1'' year');
SELECT ap_check('SELECT id FROM pf WHERE d > timestamp ''1993-06-01 12:00'' AND d <= timestamp ''1994-03-01 06:00'' AND i2 < 50');
SELECT ap_check('SELECT id FROM pf WHERE i8 >= 3000000000 AND i8 <= 9000000000 AND i4 > -1000000 AND i4 < 500000');
SELECT ap_check('SELECT id FROM pf WHERE d >= date ''1994-06-01'' AND d < date ''1994-01-01''');
SELECT ap_check('SELECT id FROM pf WHERE late >= date ''1994-03-01'' AND late < date ''1994-04-01''');
SELECT ap_check('SELECT id, length(t) FROM pf WHERE i4 >= 0 AND i4 < 100000 AND t <> ''''');
SELECT ap_check('SELECT count(*), sum(n), min(d) FROM pf WHERE d >= date ''1993-10-01'' AND d < date ''1994-02-01'' AND ts > timestamp ''1994-07-01''');
SELECT ap_check('SELECT id FROM pf WHERE tz >= timestamptz ''1994-07-01 00:00+00'' AND tz < timestamptz ''1994-08-01 00:00+00''');

-- A qual that can fail beside range checks: the same rows, the same error.
-- (PostgreSQL orders the cheaper date comparison first; the disk keeps it.)
SET active_pg.force_pushdown = on;
SELECT count(*) FROM pf WHERE 100 / i4 > 0 AND d < date '1900-01-01';
SELECT count(*) FROM pf WHERE 100 / i4 > 0 AND d > date '1900-01-01';
SET active_pg.enable = off;
SELECT count(*) FROM pf WHERE 100 / i4 > 0 AND d < date '1900-01-01';
SELECT count(*) FROM pf WHERE 100 / i4 > 0 AND d > date '1900-01-01';
RESET active_pg.enable;
RESET active_pg.force_pushdown;

-- Numeric columns against numeric constants (TPC-H Q6's l_discount and
-- l_quantity): the checks read short-format values of up to 16 digits and
-- leave the rest (long format, NaN, the infinities, more digits, scales
-- far from the constant's) to the filter.
SET client_min_messages = warning;
CREATE TABLE pfn (id int, q numeric(15,2), disc numeric(15,2), x numeric, t text);
INSERT INTO pfn
SELECT g, g % 50 + 1, (g % 11) / 100.0,
	CASE g % 17
		WHEN 0 THEN 'NaN'::numeric WHEN 1 THEN 'Infinity'::numeric
		WHEN 2 THEN '-Infinity'::numeric WHEN 3 THEN 12345678901234567.89
		WHEN 4 THEN -g / 3.0 WHEN 5 THEN g::numeric WHEN 6 THEN g * 0.001
		WHEN 7 THEN 24 WHEN 8 THEN 24.000 WHEN 9 THEN 23.9999 WHEN 10 THEN 1e-30
		WHEN 11 THEN -0.00 WHEN 12 THEN 99999999999999.99
		ELSE (g % 100 - 50) * 0.5 END,
	repeat('z', g % 130)
FROM generate_series(1, 3000) g;
UPDATE pfn SET q = NULL WHERE id % 29 = 0;
UPDATE pfn SET x = NULL WHERE id % 31 = 0;
VACUUM ANALYZE pfn;
RESET client_min_messages;
SELECT * FROM pf_matrix('q', ARRAY['24', '24.00', '23.99', '24.001', '0', '-1',
	'1000000000000000000', '0.5'], 'pfn');
SELECT * FROM pf_matrix('x', ARRAY['24', '23.9999', '-25', '0', '1e-30', '12345678901234567.89',
	'99999999999999.99', '''NaN''::numeric', '''Infinity''::numeric', '0.0000000000000000001'], 'pfn');
-- Q6's conjunction, checks merged on one column, and beside other checks.
SELECT ap_check('SELECT id FROM pfn WHERE disc BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND q < 24');
SELECT ap_check('SELECT count(*), sum(q * disc) FROM pfn WHERE disc >= 0.05 AND disc <= 0.07 AND q < 24');
SELECT ap_check('SELECT id FROM pfn WHERE x > -10 AND x <= 10.5 AND x >= 0');
SELECT ap_check('SELECT id FROM pfn WHERE x >= 24 AND x <= 24.0000 AND q > 10');
SELECT ap_check('SELECT id FROM pfn WHERE q > 49.99 AND q < 50.01 AND x < 0');
SELECT ap_check('SELECT id FROM pfn WHERE q >= 10 AND q < 5');
SELECT ap_check('SELECT id, t FROM pfn WHERE disc = 0.00 AND t <> '''' AND q <= 3');

DROP TABLE pfn;
DROP FUNCTION pf_matrix(text, text[], text);
DROP TABLE pf;
