# The fault matrix: a disk killed (SIGKILL), stopped (SIGSTOP), whose
# connection is shut down, that refuses for memory, or whose read fails
# (the daemon's test failpoints, diskd/failpoint.c), before its first page,
# in the middle of its scan or after its last frame, under ActiveScan,
# ActiveAgg (with memory flushes), a Bloom-filtered scan, a parallel scan and
# the distributed-device mode (scan_mode = 'pages'):
# every query returns the result of active_pg.enable = off, without an
# error.  A disk that fails after it delivered part of its share is taken
# over for the rest only (the log says so); a page handed back mid-scan is
# counted once; with every disk failing, queries answer from the host and
# warn once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;
use Time::HiRes qw(usleep time);

my $node = active_node('faults', qq{
active_pg.ndisks = 4
active_pg.connect_timeout = 1000
max_parallel_workers_per_gather = 0
});
# the daemons read their failpoints from this file at each scan's start
my $fpfile = $node->basedir . '/failpoints';
$ENV{ACTIVE_PG_DISKD_FAILPOINTS} = $fpfile;
$node->start;
delete $ENV{ACTIVE_PG_DISKD_FAILPOINTS};

$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE t (id int, k int, pad text);
INSERT INTO t SELECT g, g % 100, repeat('x', 100) FROM generate_series(1, 60000) g;
CREATE TABLE small (k int);
INSERT INTO small SELECT g FROM generate_series(0, 99, 3) g;
VACUUM ANALYZE t, small;
});
my $pages = $node->safe_psql('postgres', "SELECT relpages FROM pg_class WHERE relname = 't'");
cmp_ok($pages, '>', 800, "the table has $pages pages, some 200 per disk");

# Small stripe units, batches and aggregation tables: each disk delivers
# many units, row batches and memory flushes before the failpoint fires.
my $base = "SET active_pg.force_pushdown = on; SET active_pg.stripe_pages = 8; "
  . "SET active_pg.batch_size = 8; SET active_pg.disk_agg_mem = '64kB'; "
  . "SET active_pg.disk_timeout = '4s'; ";
my $parallel = "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; "
  . "SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; ";
my %q = (
	scan => "SET active_pg.enable_agg = off; "
	  . "SELECT count(*), sum(id), sum(hashint4(id)::bigint) FROM t WHERE k < 50",
	agg => "SET work_mem = '64MB'; SELECT count(*), sum(c), sum(s), sum(hashint4(g)::bigint * c) FROM "
	  . "(SELECT id % 4000 AS g, count(*) AS c, sum(id) AS s FROM t GROUP BY 1) x",
	bloom => "SET active_pg.force_bloom = on; SET active_pg.enable_agg = off; "
	  . "SELECT count(*), sum(t.id), sum(hashint4(t.id)::bigint) FROM t JOIN small s ON t.k = s.k",
	parallel => $parallel . "SET active_pg.enable_agg = off; "
	  . "SELECT count(*), sum(id), sum(hashint4(id)::bigint) FROM t WHERE k < 50",
	bloompar => $parallel . "SET active_pg.force_bloom = on; SET active_pg.enable_agg = off; "
	  . "SELECT count(*), sum(t.id), sum(hashint4(t.id)::bigint) FROM t JOIN small s ON t.k = s.k",
	pages => "SET active_pg.scan_mode = 'pages'; SET active_pg.enable_agg = off; "
	  . "SELECT count(*), sum(id), sum(hashint4(id)::bigint) FROM t WHERE k < 50",
);
# the page of a scan at which "mid" fires: a disk reads some 200 pages, a
# parallel work item (a quarter of a disk's units) some 50
my %mid = (scan => 60, agg => 60, bloom => 60, parallel => 25, bloompar => 25, pages => 60);

my %expected;
$expected{$_} = $node->safe_psql('postgres', "SET active_pg.enable = off; $q{$_}") for keys %q;

# the plans are the ones meant
my %shape = (scan => qr/ActiveScan/, agg => qr/ActiveAgg/, bloom => qr/Bloom Filter/,
	parallel => qr/Gather.*Parallel Custom Scan \(ActiveScan\)/s,
	bloompar => qr/Gather.*Parallel Custom Scan \(ActiveScan\).*\n\s*Bloom Filter/s,
	pages => qr/ActiveScan/);
for my $name (sort keys %q)
{
	(my $sql = $q{$name}) =~ s/(SELECT count.*)$/EXPLAIN (COSTS OFF) $1/;
	like($node->safe_psql('postgres', $base . $sql), $shape{$name}, "$name: the plan");
}

# the aggregation's disks flush their tables many times: a failure lands
# between flushes
(my $agg_json = $q{agg}) =~ s/(SELECT count.*)$/EXPLAIN (ANALYZE, FORMAT JSON) $1/;
my ($flushes) = $node->safe_psql('postgres', $base . $agg_json) =~ /"Disk Memory Flushes": (\d+)/;
cmp_ok($flushes // 0, '>=', 8, "agg: the disks flushed their tables $flushes times");

my @pids = wait_for_disks($node, 4);
is(scalar(@pids), 4, 'the launcher runs 4 disk daemons');

sub set_failpoint
{
	my ($line) = @_;
	open(my $fh, '>', "$fpfile.tmp") or die;
	print $fh "$line\n";
	close $fh;
	rename("$fpfile.tmp", $fpfile) or die;
}

my $t_start = time;
my $disk = 0;
my %log_of = (
	start => qr/active_pg disk \d failed before sending rows of "t"/,
	mid => qr/active_pg disk \d failed during a scan of "t" after sending part of it/,
);
for my $kind (qw(kill stop close busy io-error))
{
	for my $when (qw(start mid end))
	{
		for my $name (qw(scan agg bloom parallel bloompar pages))
		{
			# a different disk each time: the launcher backs off a disk that
			# keeps dying
			$disk = ($disk + 1) % 4;
			my $at = $when eq 'mid' ? "page:$mid{$name}" : $when;
			set_failpoint("$disk $kind $at");
			my $logstart = -s $node->logfile;
			my ($ret, $out, $err) = $node->psql('postgres', $base . $q{$name});
			unlink $fpfile;
			if ($kind eq 'stop')
			{
				kill 'CONT', disk_pids($node);
			}
			elsif ($kind eq 'kill')
			{
				wait_for_disks($node, 4);
				usleep(300_000);	# listening again
			}
			my $case = "$kind at $when, $name";
			is($out, $expected{$name}, "$case: the result of enable = off");
			is($ret, 0, "$case: no error") or diag($err);
			my $log = slurp_file($node->logfile, $logstart);
			if ($when ne 'end' || $name eq 'agg')
			{
				like($log, $log_of{$when} // qr/active_pg disk \d failed/, "$case: the disk was taken over")
				  if $when ne 'end';
			}
			if ($when eq 'end' && $name eq 'agg')
			{
				# everything was delivered and reported: the host reads nothing
				like($log, qr/after sending part of it \(.*\); the host reads the 0 blocks/,
					"$case: the host reads none of its blocks again");
			}
		}
	}
}
note(sprintf("fault matrix: %.1f s", time - $t_start));

# active_pg.host_fallback_stats as "cause events blocks bytes tuples" lines
sub fallback_stats
{
	my %st;
	for my $line (split /\n/, $node->safe_psql('postgres',
		"SELECT cause, events, blocks, bytes, tuples FROM active_pg.host_fallback_stats"))
	{
		my ($cause, @v) = split /\|/, $line;
		$st{$cause} = \@v;
	}
	return \%st;
}

# A page a disk hands back in the middle of its scan (its checksum failed
# there) is read once by the host, then the disk fails: still stock's answer.
$node->safe_psql('postgres', 'SELECT active_pg.host_fallback_stats_reset()');
my $st = fallback_stats();
is(join(',', map { $st->{$_}[1] } sort keys %$st), '0,0,0,0,0,0', 'fallback counters reset');
for my $name (qw(scan agg))
{
	set_failpoint("2 checksum page:30");
	my $r1 = $node->safe_psql('postgres', $base . $q{$name});
	is($r1, $expected{$name}, "$name: a page handed back mid-scan is counted once");
	unlink $fpfile;
}
$st = fallback_stats();
cmp_ok($st->{handed_back}[0], '>=', 1, 'host_fallback_stats: pages handed back, counted');
cmp_ok($st->{handed_back}[1], '>=', 1, 'host_fallback_stats: ... with their blocks');

# Every disk gone: queries answer from the host, and the backend warns once,
# not at every query.
$node->safe_psql('postgres', 'SELECT active_pg.host_fallback_stats_reset()');
set_failpoint("* io-error start");
my ($ret, $out, $err) = $node->psql('postgres',
	$base . $q{scan} . "; " . $q{agg} . "; " . $q{scan});
unlink $fpfile;
is($out, "$expected{scan}\n$expected{agg}\n$expected{scan}", 'every disk failing: stock\'s answers');
my @warnings = ($err =~ /WARNING:  no active_pg disk could complete a scan of "t"/g);
is(scalar(@warnings), 1, 'and one WARNING for the backend') or diag($err);
$st = fallback_stats();
is($st->{disk_unreachable}[0], 4, 'host_fallback_stats: the first query\'s 4 disks failed before delivering');
is($st->{disk_unreachable}[1], $pages, 'host_fallback_stats: ... and the host read all their blocks');
is($st->{disk_unreachable}[2], $pages * 8192, 'host_fallback_stats: bytes are blocks of 8 kB');
is($st->{disk_quarantined}[0], 8, 'host_fallback_stats: the next two queries skipped the 4 quarantined disks');
is($st->{disk_quarantined}[1], 2 * $pages, 'host_fallback_stats: ... and read their blocks on the host');
is($st->{all_disks_failed}[0], 3, 'host_fallback_stats: 3 scans without any disk');
is($st->{disk_failed_mid_scan}[0], 0, 'host_fallback_stats: no disk failed mid-scan');
# the failures and the quarantine are visible to every session
my $disks = $node->safe_psql('postgres',
	"SELECT count(*) FILTER (WHERE quarantined_until > now()), bool_and(failures >= 1), "
	  . "count(*) FILTER (WHERE last_failure <> '' AND last_failure_at > now() - '1 min'::interval) "
	  . "FROM active_pg.disks()");
is($disks, "4|t|4", "active_pg.disks(): 4 disks quarantined, failures counted, the last one's reason");

# EXPLAIN ANALYZE counts the disk taken over and the blocks the host read
$node->safe_psql('postgres', 'SELECT active_pg.host_fallback_stats_reset()');
set_failpoint("1 io-error page:60");
$out = $node->safe_psql('postgres', $base . "SET active_pg.enable_agg = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	  . "SELECT count(*) FROM t WHERE k < 50");
unlink $fpfile;
like($out, qr/Disks Taken Over: 1 \(blocks read by the host (\d+)\)/, 'EXPLAIN ANALYZE: the disk taken over');
my ($blocks) = $out =~ /blocks read by the host (\d+)/;
cmp_ok($blocks, '<', $pages / 4 - 20, 'the host read less than the disk\'s share');
$st = fallback_stats();
is("$st->{disk_failed_mid_scan}[0] $st->{disk_failed_mid_scan}[1]", "1 $blocks",
	'host_fallback_stats: the disk taken over mid-scan and the blocks the host read');
is($st->{disk_unreachable}[0] + $st->{disk_quarantined}[0], 0, 'host_fallback_stats: no other cause');

# The distributed-device mode: a disk that fails after shipping part of its
# pages is taken over for the pages that did not arrive, each read once.
$node->safe_psql('postgres', 'SELECT active_pg.host_fallback_stats_reset()');
set_failpoint("2 io-error page:60");
$out = $node->safe_psql('postgres', $base . "SET active_pg.scan_mode = 'pages'; SET active_pg.enable_agg = off; "
	  . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM t WHERE k < 50");
unlink $fpfile;
like($out, qr/Disks Taken Over: 1 \(blocks read by the host (\d+)\)/, 'pages: EXPLAIN ANALYZE, the disk taken over');
($blocks) = $out =~ /blocks read by the host (\d+)/;
cmp_ok($blocks, '<', $pages / 4 - 20, 'pages: the host read less than the disk\'s share');
$st = fallback_stats();
is("$st->{disk_failed_mid_scan}[0] $st->{disk_failed_mid_scan}[1]", "1 $blocks",
	'pages: host_fallback_stats, the disk taken over mid-scan');
is($st->{pages_mode}[1] + $blocks, $pages, 'pages: host_fallback_stats, every other page shipped, none twice');
# ... and in a parallel scan, whose participants take their work items over
for my $at (qw(start page:25 end))
{
	set_failpoint("3 io-error $at");
	($ret, $out, $err) = $node->psql('postgres', $base . $parallel . $q{pages});
	unlink $fpfile;
	is($out, $expected{pages}, "pages, parallel, io-error at $at: the result of enable = off");
	is($ret, 0, "pages, parallel, io-error at $at: no error") or diag($err);
}

# Daemons without io_uring (as under a container's seccomp profile, which
# refuses io_uring_setup): they read with pread, say so once, and answer
# the same, on the disks.
$node->stop;
$ENV{ACTIVE_PG_DISKD_NO_IO_URING} = '1';
my $logstart = -s $node->logfile;
$node->start;
delete $ENV{ACTIVE_PG_DISKD_NO_IO_URING};
is(scalar(wait_for_disks($node, 4)), 4, 'the launcher runs 4 daemons without io_uring');
for my $name (sort keys %q)
{
	is($node->safe_psql('postgres', $base . $q{$name}), $expected{$name}, "pread: $name, stock's answer");
}
$out = $node->safe_psql('postgres', $base . "SET active_pg.enable_agg = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	  . "SELECT count(*) FROM t WHERE k < 50");
like($out, qr/Disk Tuples: seen 60000/, 'pread: the disks did the whole scan');
unlike($out, qr/Taken Over/, 'pread: no disk was taken over');
my @said = (slurp_file($node->logfile, $logstart) =~ /io_uring is off \(--no-io-uring\); reading with pread/g);
is(scalar(@said), 4, 'each daemon says once that it reads with pread');

$node->stop;
done_testing();
