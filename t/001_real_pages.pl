# diskd's page and tuple decoder against pages written by a real server:
# every supported type, NULLs, alignment, short and long varlena headers,
# pglz-compressed inline values and external TOAST pointers.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = $ENV{ACTIVE_PG_SRC} or die "ACTIVE_PG_SRC not set";
my $node = PostgreSQL::Test::Cluster->new('pages');
$node->init;
$node->start;

$node->safe_psql('postgres', q{
CREATE TABLE p (id int, b bool, i2 int2, i8 int8, f4 float4, f8 float8,
	n numeric, d date, ts timestamp, tz timestamptz, t text, v varchar(20), c char(6));
ALTER TABLE p ALTER COLUMN t SET STORAGE EXTENDED;
INSERT INTO p
SELECT g,
	CASE WHEN g % 5 = 0 THEN NULL ELSE g % 2 = 0 END,
	CASE WHEN g % 7 = 0 THEN NULL ELSE (g * 13 % 65536 - 32768)::int2 END,
	CASE WHEN g % 3 = 0 THEN NULL ELSE (g::int8 * 7919) ^ 2 END,
	CASE WHEN g % 4 = 0 THEN NULL ELSE g / 7.0 END,
	CASE WHEN g % 6 = 0 THEN NULL ELSE g / 3.0 * 1e10 END,
	CASE g % 9 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'
		WHEN 4 THEN (g * 1.000001)::numeric WHEN 5 THEN -(g::numeric ^ 7) / 3
		WHEN 6 THEN 0 WHEN 7 THEN 1e-20 * g ELSE 123456789012345678901234567890.5 * g END,
	CASE WHEN g % 8 = 0 THEN NULL ELSE date '1970-01-01' + g * 17 END,
	CASE WHEN g % 10 = 0 THEN NULL ELSE timestamp '1999-12-31 23:59:59.5' + g * interval '1 hour 1 second' END,
	CASE WHEN g % 11 = 0 THEN NULL ELSE timestamptz '1960-06-01 00:00+00' + g * interval '1 day 7 min' END,
	CASE WHEN g % 12 = 0 THEN NULL WHEN g % 12 = 1 THEN '' WHEN g % 50 = 3 THEN repeat('abc' || g, 1000)
		ELSE 'text ' || g END,
	CASE WHEN g % 13 = 0 THEN NULL ELSE 'v' || repeat('x', g % 19) END,
	CASE WHEN g % 14 = 0 THEN NULL ELSE 'c' || (g % 100) END
FROM generate_series(1, 3000) g;
-- one external (TOASTed out of line) value
INSERT INTO p (id, t) SELECT 9999, string_agg(md5(i::text), '') FROM generate_series(1, 300) i;
CHECKPOINT;
});

is($node->safe_psql('postgres', "SELECT count(*) > 0 FROM p WHERE pg_column_compression(t) = 'pglz'"),
	't', 'the table holds pglz-compressed inline values');
my $path = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('p')");
my ($stdout, $stderr);
my $ok = IPC::Run::run(
	[ "$src/diskd/test/pagedump", $path,
	  'int4,bool,int2,int8,float4,float8,numeric,date,timestamp,timestamptz,text,varchar,bpchar' ],
	'>', \$stdout, '2>', \$stderr);
ok($ok, 'pagedump ran') or diag($stderr);

my $expected = $node->safe_psql('postgres', q{
SET extra_float_digits = 3;
SELECT (ctid::text::point)[0]::int || '/' || (ctid::text::point)[1]::int || '|' || concat_ws('|',
	coalesce(id::text, '\N'),
	coalesce(CASE WHEN b THEN 't' WHEN NOT b THEN 'f' END, '\N'),
	coalesce(i2::text, '\N'),
	coalesce(i8::text, '\N'),
	coalesce(f4::text, '\N'),
	coalesce(f8::text, '\N'),
	coalesce(n::text, '\N'),
	coalesce((d - date '2000-01-01')::text, '\N'),
	coalesce((extract(epoch FROM ts - timestamp '2000-01-01') * 1000000)::int8::text, '\N'),
	coalesce(((extract(epoch FROM tz) - 946684800) * 1000000)::int8::text, '\N'),
	coalesce(CASE WHEN id = 9999 THEN '<toast>' ELSE t END, '\N'),
	coalesce(v::text, '\N'),
	CASE WHEN c IS NULL THEN '\N' ELSE format('%s', c) END)
FROM p ORDER BY ctid;
});

my @got = split /\n/, $stdout;
my @want = split /\n/, $expected;
is(scalar(@got), scalar(@want), 'same number of tuples decoded (' . scalar(@want) . ')');

# floats are compared numerically (float4 printed with 9 digits by pagedump)
sub same_field
{
	my ($col, $g, $w) = @_;
	return 1 if $g eq $w;
	if ($col == 5 || $col == 6)
	{
		return 0 if $g eq '\N' || $w eq '\N';
		my ($x, $y) = ($g + 0, $w + 0);
		return 1 if $x == $y;
		return abs($x - $y) <= 1e-6 * abs($y);
	}
	return 0;
}

my $mismatches = 0;
for my $i (0 .. $#want)
{
	my @g = split /\|/, ($got[$i] // ''), -1;
	my @w = split /\|/, $want[$i], -1;
	my $same = @g == @w;
	for my $c (0 .. $#w)
	{
		$same &&= same_field($c, $g[$c] // '', $w[$c]);
	}
	if (!$same)
	{
		diag("tuple $i: got  '" . ($got[$i] // '') . "'\n          want '$want[$i]'")
		  if $mismatches < 10;
		$mismatches++;
	}
}
is($mismatches, 0, 'every decoded value equals what the server returns');
ok((grep { /<toast>/ } @got) == 1, 'the external value is recognized as a TOAST pointer');
ok((grep { /(abc3){20}/ } @got) > 0, 'pglz-compressed inline values are decompressed');

$node->stop;
done_testing();
