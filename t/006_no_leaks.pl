# Many pushed-down queries in one session leak nothing: after a warm-up
# (catalog and plan caches), the backend's memory contexts are exactly as
# large after another round of ActiveScan, ActiveAgg and Bloom-join queries
# as before it, and the disk daemons' resident memory stays put over
# hundreds of scans each.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;

my $node = PostgreSQL::Test::Cluster->new('leaks');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'active_pg'
active_pg.ndisks = 4
max_parallel_workers_per_gather = 0
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE f (id int, k int, amount numeric(10,2), note text);
INSERT INTO f SELECT g, g % 50, g / 7.0, 'note ' || g FROM generate_series(1, 20000) g;
CREATE TABLE d (k int, name text);
INSERT INTO d SELECT g, 'd' || g FROM generate_series(0, 9) g;
ANALYZE f;
ANALYZE d;
});

# Resident set of each disk daemon of this node, in kB.
sub disk_rss
{
	my %rss;
	for my $pid (disk_pids($node))
	{
		open(my $st, '<', "/proc/$pid/status") or next;
		local $/;
		my $status = <$st>;
		close $st;
		$rss{"/proc/$pid"} = $1 if $status =~ /^VmRSS:\s+(\d+)/m;
	}
	return \%rss;
}

# one round: a filter, a computed projection, an aggregation at the disks,
# a Bloom-filtered join and a LIKE
my @round = (
	"SELECT count(*) FROM (SELECT id, note FROM f WHERE k = 7) s",
	"SELECT sum(x) FROM (SELECT amount * 2 + 1 AS x FROM f WHERE id % 3 = 0) s",
	"SELECT k, count(*), sum(amount), min(note) FROM f GROUP BY k ORDER BY k LIMIT 1",
	"SELECT count(*) FROM f JOIN d ON f.k = d.k WHERE d.name LIKE 'd1%'",
	"SELECT count(*) FROM f WHERE k < 10 AND note LIKE '%9'",
);
my $rounds = 60;
for my $q (@round)
{
	my $plan = $node->safe_psql('postgres',
		"SET active_pg.force_pushdown = on; SET active_pg.force_bloom = on; EXPLAIN (COSTS OFF) $q");
	like($plan, qr/Custom Scan \(Active(Scan|Agg)\)/, "pushed down: $q");
}
my $sql = join("\n", ("SET active_pg.force_pushdown = on;",
	"SET active_pg.force_bloom = on;",
	(map { "$_;" } @round) x $rounds,
	"SELECT 'mark', sum(total_bytes) FROM pg_backend_memory_contexts;",
	(map { "$_;" } @round) x $rounds,
	"SELECT 'mark', sum(total_bytes) FROM pg_backend_memory_contexts;",
	(map { "$_;" } @round) x $rounds,
	"SELECT 'mark', sum(total_bytes) FROM pg_backend_memory_contexts;"));

# warm up the daemons' threads and buffer caches before measuring them
$node->safe_psql('postgres', join("\n", "SET active_pg.force_pushdown = on;",
	"SET active_pg.force_bloom = on;", (map { "$_;" } @round) x 40));
my $rss_before = disk_rss();
is(scalar(keys %$rss_before), 4, 'four disk daemons');

my $out = $node->safe_psql('postgres', $sql);
my @marks = map { (split /\|/)[1] } grep { /^mark\|/ } split /\n/, $out;
is(scalar(@marks), 3, 'three measurements of the backend');
is($marks[2], $marks[1],
	"the backend's memory contexts do not grow over $rounds more rounds ($marks[1] bytes)");

my $rss_after = disk_rss();
for my $p (sort keys %$rss_before)
{
	my $grew = ($rss_after->{$p} // 0) - $rss_before->{$p};
	cmp_ok($grew, '<', 2048,
		"disk daemon $p: resident memory grew by $grew kB over "
		  . (3 * $rounds * scalar(@round)) . " scans");
}

$node->stop;
done_testing();
