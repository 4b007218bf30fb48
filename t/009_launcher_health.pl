# The launcher notices more than a dead daemon: a socket directory that
# disappeared is recreated and its disks restarted, a disk whose socket file
# is gone is restarted, and a disk that stops answering (SIGSTOP) is killed
# and restarted.  Each time the disks serve scans again without a takeover.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;
use Time::HiRes qw(usleep);
use File::Path qw(rmtree);

my $node = active_node('launcher_health', qq{
active_pg.ndisks = 2
active_pg.connect_timeout = 1000
max_parallel_workers_per_gather = 0
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE t (id int, k int);
INSERT INTO t SELECT g, g % 10 FROM generate_series(1, 20000) g;
VACUUM ANALYZE t;
});
my $q = "SELECT count(*), sum(id) FROM t WHERE k = 3";
my $expected = $node->safe_psql('postgres', "SET active_pg.enable = off; $q");
my $dir = $node->data_dir . '/active_pg';

# Wait up to 40 s for $cond; true if it held.
sub wait_until
{
	my ($cond) = @_;
	for (1 .. 400)
	{
		return 1 if $cond->();
		usleep(100_000);
	}
	return 0;
}

# The disks scan again, none taken over, and the answer is stock's.
sub disks_serve
{
	my ($what) = @_;
	my $out = $node->safe_psql('postgres', "SET active_pg.force_pushdown = on; SET active_pg.enable_agg = off; "
		  . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $q");
	like($out, qr/Disk Tuples: seen 20000/, "$what: the disks scan again");
	unlike($out, qr/Taken Over/, "$what: no disk taken over");
	is($node->safe_psql('postgres', "SET active_pg.force_pushdown = on; $q"), $expected,
		"$what: stock's answer");
}

my @pids = wait_for_disks($node, 2);
is(scalar(@pids), 2, 'the launcher runs 2 disks');
ok(wait_until(sub { -S "$dir/disk0.sock" && -S "$dir/disk1.sock" }), 'both listen');

# 1. the socket directory removed
my $logstart = -s $node->logfile;
rmtree($dir);
ok(wait_until(sub { -S "$dir/disk0.sock" && -S "$dir/disk1.sock" }),
	'the socket directory and both sockets are back');
like(slurp_file($node->logfile, $logstart), qr/active_pg disk \d \(pid \d+\) lost its socket directory; killing it to restart it/,
	'the log says why the disks restarted');
disks_serve('socket directory removed');

# 2. one socket file removed
@pids = wait_for_disks($node, 2);
$logstart = -s $node->logfile;
unlink("$dir/disk1.sock");
ok(wait_until(sub { -S "$dir/disk1.sock" }), 'the socket is back');
like(slurp_file($node->logfile, $logstart), qr/active_pg disk 1 \(pid \d+\) lost its socket; killing it to restart it/,
	'the log says the disk lost its socket');
disks_serve('socket removed');

# 3. a stopped daemon: it accepts connections and never answers
@pids = wait_for_disks($node, 2);
$logstart = -s $node->logfile;
kill 'STOP', $pids[0];
ok(wait_until(sub { my @now = disk_pids($node); @now == 2 && !grep { $_ == $pids[0] } @now }),
	'the stopped daemon is replaced');
like(slurp_file($node->logfile, $logstart),
	qr/active_pg disk \d \(pid $pids[0]\) did not answer 3 probes in a row \(.*\); killing it to restart it/,
	'the log says the disk did not answer');
ok(wait_until(sub { -S "$dir/disk0.sock" && -S "$dir/disk1.sock" }), 'both listen again');
disks_serve('stopped daemon');

$node->stop;
done_testing();
