# A failing disk costs time, never the query: a daemon stopped (SIGSTOP)
# before a scan or during one, before it sent anything, is taken over by the
# host, which reads its stripe units through the buffer manager; the answer
# is stock's, EXPLAIN ANALYZE counts the disks taken over, the log says why.
# A slow disk that keeps sending heartbeats is not mistaken for a stopped
# one.  (An unreachable disk: t/002_disk_crash.pl.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;
use Time::HiRes qw(usleep time);

my $node = active_node('takeover', qq{
active_pg.ndisks = 4
active_pg.connect_timeout = 1000
max_parallel_workers_per_gather = 0
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE big (id int, k int, pad text);
INSERT INTO big SELECT g, g % 100, repeat('x', 100) FROM generate_series(1, 300000) g;
VACUUM ANALYZE big;
});

my %q = (
	agg => "SELECT count(*), sum(id) FROM big WHERE k = 7",
	scan => "SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM big WHERE k = 8 AND id < 20000 OFFSET 0) s",
);
my %expected;
$expected{$_} = $node->safe_psql('postgres', "SET active_pg.enable = off; $q{$_}") for keys %q;
my $forced = "SET active_pg.force_pushdown = on; ";


my @pids = wait_for_disks($node, 4);
is(scalar(@pids), 4, 'the launcher runs 4 disk daemons');

# 1. a stopped daemon (it accepts connections, never answers)
kill 'STOP', $pids[1];
my $logstart = -s $node->logfile;
my $t0 = time;
is($node->safe_psql('postgres', $forced . $q{agg}), $expected{agg}, 'ActiveAgg with a stopped disk: stock\'s answer');
ok(time - $t0 < 30, 'within the connect timeout, not forever');
like(slurp_file($node->logfile, $logstart),
	qr/active_pg disk \d failed before sending rows of "big" \(handshake failed: timed out waiting for the handshake reply\); the host reads its \d+ blocks/,
	'the log says which disk failed and why');
# the backend remembers: the next scans take it over at once
my $session = "SET active_pg.force_pushdown = on; " . $q{agg} . "; " . $q{scan} . "; "
  . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " . $q{agg};
$t0 = time;
my $out = $node->safe_psql('postgres', $session);
like($out, qr/^\Q$expected{agg}\E\n\Q$expected{scan}\E\n/, 'ActiveScan and ActiveAgg with a stopped disk: stock\'s answers');
like($out, qr/Disks Taken Over: 1/, 'EXPLAIN ANALYZE counts the disk taken over');
like($out, qr/Takeover Reason: disk \d+: (skipped|handshake failed): \S/,
	'and says which disk and why');
kill 'CONT', $pids[1];

# 2. and 3. need slow disks: emulated media at 2 MB/s (a daemon setting,
# passed by the launcher), so each disk's share takes about 5 s
$node->append_conf('postgresql.conf', "active_pg.disk_media_mb_per_sec = 2\n");
$node->restart;
@pids = wait_for_disks($node, 4);
is(scalar(@pids), 4, 'the launcher runs 4 slow disk daemons');

# 2. a disk stopped in the middle of a scan, before it sent anything (a
# filter that passes one row per disk, shipped at the end): after
# active_pg.disk_timeout the host takes its units over
my $quiet = "SELECT count(*), sum(id) FROM big WHERE id % 100000 = 99999";
my $quiet_expected = $node->safe_psql('postgres', "SET active_pg.enable = off; $quiet");
my $h = $node->background_psql('postgres', on_error_stop => 0);
$h->query_safe("SET active_pg.force_pushdown = on");
$h->query_safe("SET active_pg.disk_timeout = '4s'");
$logstart = -s $node->logfile;
$h->query_until(qr/started/, "\\echo started\n$quiet;\n");
usleep(1_000_000);
kill 'STOP', $pids[2];
$out = $h->query("SELECT 'after'");
kill 'CONT', $pids[2];
like($out, qr/^\Q$quiet_expected\E\n/m, 'a disk stopped mid-scan before sending rows: stock\'s answer')
  or diag("stdout: $out\nstderr: $h->{stderr}");
$h->quit;
like(slurp_file($node->logfile, $logstart),
	qr/active_pg disk \d failed before sending rows of "big" \(no progress for 4000 ms\)/,
	'the log says the disk made no progress');

# 3. a slow disk is not a stopped one: its share lasts longer than the
# timeout, and its heartbeats keep it alive
$out = $node->safe_psql('postgres', "SET active_pg.force_pushdown = on; SET active_pg.disk_timeout = '4s'; "
	  . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $quiet");
unlike($out, qr/Disks Taken Over/, 'a slow disk that sends heartbeats is not taken over');
like($out, qr/Disk Tuples: seen 300000/, 'the disks did the whole scan');
is($node->safe_psql('postgres', $forced . $quiet), $quiet_expected, 'and the answer is stock\'s');

$node->stop;
done_testing();
