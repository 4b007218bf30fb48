# Damaged pages in the relation files.  A page whose checksum fails at a
# disk goes back to the host, which reads it through the buffer manager as a
# sequential scan would: pushdown raises PostgreSQL's own "invalid page"
# error where stock PostgreSQL does, returns what stock PostgreSQL returns
# with ignore_checksum_failure, and the disks go on serving.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
$node->init(extra => ['--data-checksums']);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'active_pg'
active_pg.ndisks = 4
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE t (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g;
CREATE TABLE healthy (id int);
INSERT INTO healthy SELECT generate_series(1, 10000);
VACUUM t;
VACUUM healthy;
CHECKPOINT;
});
$node->safe_psql('postgres', 'CREATE EXTENSION pageinspect');
my $relpath = $node->safe_psql('postgres', "SELECT pg_relation_filepath('t')");
# a byte of the first tuple's pad text in block 9 (id is at t_hoff, the pad's
# 1-byte header after it)
my $pad_off = $node->safe_psql('postgres',
	"SELECT lp_off + t_hoff + 10 FROM heap_page_items(get_raw_page('t', 9)) WHERE lp = 1");
my $nblocks = $node->safe_psql('postgres', "SELECT pg_relation_size('t') / 8192");
cmp_ok($nblocks, '>', 20, 'the table spans the disks');

my $query = 'SELECT count(*), sum(id) FROM t WHERE id % 7 = 0';
my $good = $node->safe_psql('postgres', "SET active_pg.enable = off; $query");
my $healthy = $node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM healthy');

# Damage one byte of pad text in block 9 with the server stopped: the page
# keeps its structure and the query's column, its checksum no longer matches.
$node->stop;
my $file = $node->data_dir . "/$relpath";
open(my $fh, '+<', $file) or die "open $file: $!";
binmode $fh;
my $at = 9 * 8192 + $pad_off;
seek($fh, $at, 0) or die;
my $byte;
read($fh, $byte, 1) == 1 or die;
seek($fh, $at, 0) or die;
print $fh chr(ord($byte) ^ 0x5a);
close $fh or die;
$node->start;

# Run sql with pushdown forced or off; (stdout, stderr without the
# context lines).
sub run
{
	my ($pushdown, $sql) = @_;
	my $set = $pushdown
	  ? 'SET active_pg.force_pushdown = on; SET max_parallel_workers_per_gather = 0;'
	  : 'SET active_pg.enable = off;';
	my ($ret, $out, $err) = $node->psql('postgres', "$set $sql");
	$err = join("\n", grep { /ERROR|WARNING/ } split /\n/, $err);
	return ($ret, $out, $err);
}

my ($ret_on, $out_on, $err_on) = run(1, $query);
my ($ret_off, $out_off, $err_off) = run(0, $query);
isnt($ret_off, 0, 'stock PostgreSQL fails on the damaged page');
like($err_off, qr/invalid page in block 9 of relation/, 'with its invalid-page error');
isnt($ret_on, 0, 'pushdown fails too');
is($err_on, $err_off, 'with the same error');

# the page was handed back: EXPLAIN ANALYZE counts it (and raises the same error)
my (undef, undef, $err_explain) = run(1, "EXPLAIN (ANALYZE) $query");
is($err_explain, $err_off, 'EXPLAIN ANALYZE raises the same error');

# ignore_checksum_failure: both read the page as it is
($ret_on, $out_on, $err_on) = run(1, "SET ignore_checksum_failure = on; $query");
($ret_off, $out_off, $err_off) = run(0, "SET ignore_checksum_failure = on; $query");
is($ret_off, 0, 'stock PostgreSQL reads the page with ignore_checksum_failure');
is($ret_on, 0, 'so does pushdown');
is($out_on, $out_off, 'with the same result');
is($out_on, $good, 'which is the undamaged result (the flipped byte is padding text)');

# the host now holds the page in its buffers; the disks still read the
# damaged file and hand it back every time
my ($ret_explain, $plan) = run(1,
	"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $query");
is($ret_explain, 0, 'EXPLAIN ANALYZE runs');
like($plan, qr/Fallback: (?:tuples \d+ \(fetched \d+, visible \d+\), )?pages 1\b/,
	'one page handed back by the disks and read by the host')
  or diag($plan);
my ($seen) = $plan =~ /Disk Tuples: seen (\d+)/;
my ($fetched) = $plan =~ /\(fetched (\d+),/;
is(($seen // 0) + ($fetched // 0), 20000,
	"the disks saw every tuple but the page's, the host fetched the page's ($seen + $fetched)");

# the disks keep serving
is($node->safe_psql('postgres',
	'SET active_pg.force_pushdown = on; SELECT count(*), sum(id) FROM healthy'),
	$healthy, 'another table is scanned at the disks as before');
is($node->safe_psql('postgres', 'SELECT count(*) FILTER (WHERE alive) FROM active_pg.disks()'),
	'4', 'every disk answers');

$node->stop;
done_testing();
