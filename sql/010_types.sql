-- Every supported type and operator, with NULLs and edge values: results with
-- pushdown forced must equal results with active_pg.enable = off.
SET active_pg.stripe_pages = 1;		-- spread even small tables over all disks

CREATE TABLE ty (
	id int,
	b bool,
	i2 int2,
	i4 int4,
	i8 int8,
	f4 float4,
	f8 float8,
	n numeric,
	n2 numeric(12,2),
	d date,
	ts timestamp,
	tz timestamptz,
	t text,
	tc text COLLATE "C",
	v varchar(10),
	c char(5)
);

INSERT INTO ty VALUES
	(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(2, true, 32767, 2147483647, 9223372036854775807, 'NaN', 'NaN', 'NaN', 0, 'infinity', 'infinity', 'infinity', '', '', '', ''),
	(3, false, -32768, -2147483648, -9223372036854775808, 'Infinity', 'Infinity', 'Infinity', -0.01, '-infinity', '-infinity', '-infinity', ' ', ' ', ' ', ' '),
	(4, true, 0, 0, 0, '-Infinity', '-Infinity', '-Infinity', 1.50, '2000-01-01', '2000-01-01', '2000-01-01 00:00+00', 'abc', 'abc', 'abc', 'abc'),
	(5, false, 1, 1, 1, '-0', '-0', 1.5, 1.5, '1994-01-01', '1994-01-01 00:00:00', '1994-01-01 12:00+00', 'abc ', 'abc ', 'abc ', 'abc  '),
	(6, NULL, -1, -1, -1, 1.5, 1.5, 123456789012345678901234567890.123456789, 9999999999.99, '1995-06-30', '1995-06-30 23:59:59.999999', '1995-06-30 23:59:59+02', 'ABC', 'ABC', 'ABC', 'ABC'),
	(7, true, 100, 100000, 10000000000, 1e-30, 1e300, 0.000000000000000000001, -9999999999.99, '4713-01-01 BC', '4713-01-01 00:00 BC', '4713-01-01 00:00+00 BC', 'zzz', 'zzz', 'zzz', 'zz'),
	(8, false, 7, 7, 7, 7, 7, -1e100, 7, '5874897-12-31', '294276-12-31 23:59:59', '294276-12-31 23:59:59+00', 'é', 'é', 'é', 'é'),
	(9, true, 24, 24, 24, 0.06, 0.06, 0.06, 0.06, '1994-12-31', '1995-01-01 00:00:00', '1995-01-01 00:00:00+00', 'a%b_c', 'a%b_c', 'a%b', 'a%b');

-- bulk rows: NULLs in a pattern, long and compressible strings, many digits
INSERT INTO ty
SELECT g,
	CASE WHEN g % 7 = 0 THEN NULL ELSE g % 2 = 0 END,
	(g % 30000)::int2,
	CASE WHEN g % 11 = 0 THEN NULL ELSE g * 37 END,
	g::int8 * 1000003,
	(g % 1000) / 7.0,
	CASE WHEN g % 13 = 0 THEN NULL ELSE g / 3.0 END,
	(g % 997) / 100.0,
	(g % 5003) / 100.0,
	date '1992-01-01' + (g % 2557),
	timestamp '1992-01-01' + (g % 2557) * interval '1 day' + (g % 86400) * interval '1 second',
	timestamptz '1992-01-01 00:00+00' + (g % 2557) * interval '1 day',
	CASE WHEN g % 5 = 0 THEN NULL ELSE 'row ' || g END,
	'k' || (g % 100),
	(g % 50)::text,
	CASE WHEN g % 3 = 0 THEN 'x' ELSE 'y' || (g % 9) END
FROM generate_series(10, 30000) g;

-- a few wide values: compressed inline and TOASTed externally
INSERT INTO ty (id, t, tc) VALUES
	(40001, repeat('compressible ', 500), repeat('c', 3000)),
	(40002, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) i), 'ext');

SELECT ap_check('SELECT * FROM ty');

-- comparison operators over every type
CREATE TEMP TABLE probes (col text, val text);
INSERT INTO probes VALUES
	('b', 'true'), ('b', 'false'),
	('i2', '0'), ('i2', '100'), ('i2', '-32768'), ('i2', '24::int8'), ('i2', '7::int4'),
	('i4', '0'), ('i4', '100000'), ('i4', '2147483647'), ('i4', '500::int2'), ('i4', '99999::int8'),
	('i8', '0'), ('i8', '10000000000'), ('i8', '-9223372036854775808'), ('i8', '7::int2'), ('i8', '1000003::int4'),
	('f4', '''NaN''::float4'), ('f4', '1.5::float4'), ('f4', '0::float4'), ('f4', '''Infinity''::float8'), ('f4', '7::float8'),
	('f8', '''NaN''::float8'), ('f8', '1.5'), ('f8', '''-Infinity''::float8'), ('f8', '0.06::float4'), ('f8', '100::float8'),
	('n', '1.50'), ('n', '''NaN''::numeric'), ('n', '''Infinity''::numeric'), ('n', '0.06'), ('n', '-1e100'), ('n', '5.5'),
	('n2', '1.5'), ('n2', '0'), ('n2', '25.00'), ('n2', '9999999999.99'),
	('d', 'date ''1994-01-01'''), ('d', 'date ''infinity'''), ('d', 'date ''-infinity'''), ('d', 'date ''1996-02-29'''),
	('d', 'timestamp ''1994-01-01 00:00:00'''), ('d', 'date ''1994-01-01'' + interval ''1'' year'),
	('d', 'timestamp ''infinity'''), ('d', 'timestamp ''1995-06-30 12:00''' ),
	('ts', 'timestamp ''1995-01-01'''), ('ts', 'timestamp ''infinity'''), ('ts', 'date ''1995-01-01'''),
	('ts', 'date ''infinity'''), ('ts', 'timestamp ''1993-05-05 10:00:00'''),
	('tz', 'timestamptz ''1995-01-01 00:00+00'''), ('tz', 'timestamptz ''-infinity'''),
	('t', '''abc'''), ('t', ''''''), ('t', '''row 100'''), ('t', ''' '''),
	('tc', '''abc'''), ('tc', '''k5'''), ('tc', '''ABC'''), ('tc', ''''''),
	('v', '''abc'''), ('v', '''7'''), ('v', ''''''),
	('c', '''abc'''), ('c', '''abc  '''::text), ('c', '''x'''::bpchar), ('c', '''y3'''), ('c', ''''''::bpchar);

SELECT p.col, p.val, o.op,
	ap_check(format('SELECT id, %I FROM ty WHERE %I %s %s', p.col, p.col, o.op, p.val)) AS result
FROM probes p, (VALUES ('='), ('<>'), ('<'), ('<='), ('>'), ('>=')) o(op)
ORDER BY p.col, p.val, o.op;

-- NULL tests, boolean tests, bare boolean columns, three-valued logic
SELECT ap_check('SELECT id FROM ty WHERE ' || q) AS result, q
FROM (VALUES
	('i4 IS NULL'), ('i4 IS NOT NULL'), ('t IS NULL'), ('n IS NOT NULL'),
	('b'), ('NOT b'), ('b IS TRUE'), ('b IS NOT TRUE'), ('b IS FALSE'), ('b IS NOT FALSE'),
	('b IS UNKNOWN'), ('b IS NOT UNKNOWN'),
	('b AND i4 > 100'), ('b OR i4 > 100'), ('NOT (b OR i4 > 100)'), ('NOT (b AND i4 > 100)'),
	('(i4 > 100) IS NOT TRUE'), ('i4 > 100 OR i4 IS NULL'),
	('f8 > 5 AND (t = ''row 100'' OR t IS NULL)'),
	('i2 < 0 OR i8 > 5000000000 OR d < date ''1993-01-01'''),
	('NOT (t <> ''row 42'')')
) v(q)
ORDER BY q;
-- comparisons with a NULL constant fold to NULL: the relation is proven empty
SELECT ap_check('SELECT id FROM ty WHERE i4 = NULL', false);
SELECT ap_check('SELECT id FROM ty WHERE i4 <> NULL::int', false);

-- projections: only the needed columns come back, in any order
SELECT ap_check('SELECT t, id, c FROM ty WHERE i4 > 500000');
SELECT ap_check('SELECT ty FROM ty WHERE n2 > 10');
SELECT ap_check('SELECT length(t), upper(tc) FROM ty WHERE d >= date ''1994-01-01''');
SELECT ap_check('SELECT id FROM ty WHERE t LIKE ''row 1%''');
SELECT ap_check('SELECT count(*) FROM ty WHERE c = ''x''');
