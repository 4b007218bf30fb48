# A disk daemon killed with SIGKILL during a scan, after it sent rows: the
# host takes over what the disk had not delivered and the query returns the
# right answer, the log names the disk; the launcher restarts the daemon
# and the next query is right too; the same during a parallel scan.  Also:
# query cancel and statement_timeout during a pushed-down scan.  (The fault
# matrix of t/008_fault_matrix.pl places failures exactly.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'active_pg'
active_pg.ndisks = 4
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE big (id int, pad text);
INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 400000) g;
});

my $expected = $node->safe_psql('postgres',
	"SET active_pg.enable = off; SELECT count(*), sum(id) FROM big WHERE id % 3 = 0");
is($node->safe_psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*), sum(id) FROM big WHERE id % 3 = 0"),
	$expected, 'pushed-down result before the crash');


my @pids = wait_for_disks($node, 4);
is(scalar(@pids), 4, 'the launcher runs 4 disk daemons');

# a slow scan (many rows shipped) so that the kill lands mid-scan; no
# workers, so that one process holds every disk's stream (a parallel scan
# claims work items as it goes: see below)
my $h = $node->background_psql('postgres', on_error_stop => 0);
$h->query_safe("SET active_pg.force_pushdown = on");
$h->query_safe("SET max_parallel_workers_per_gather = 0");
$h->query_until(qr/started/, q{
\echo started
SELECT count(*) FROM big WHERE id % 1000 <> 0 OR pg_sleep(0.01) IS NOT NULL;
});
usleep(200_000);
my $logstart = -s $node->logfile;
kill 'KILL', $pids[1];
my $out = $h->query("SELECT 'after'");
my $err = $h->{stderr};
$h->quit;
like($out, qr/^400000\nafter/, 'the query completes with the right answer')
  or diag("stdout: $out\nstderr: $err");
unlike($err, qr/ERROR/, 'without an error');
like(slurp_file($node->logfile, $logstart),
	qr/active_pg disk \d failed during a scan of "big" after sending part of it \(.*\); the host reads the \d+ blocks it had not delivered/,
	'the log names the disk taken over after it sent rows');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server survived');

# the launcher restarts the daemon
ok(wait_for_restart($node, 4, $pids[1]), 'the launcher restarted the killed disk');
is($node->safe_psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*), sum(id) FROM big WHERE id % 3 = 0"),
	$expected, 'the next query is correct');

# a disk killed during a parallel scan (Gather's participants claim work
# items, each a share of one disk's stripes): an item that was streaming is
# taken over for what it had not delivered; items claimed later connect to
# the restarted daemon or are taken over.
my $parallel = q{
SET active_pg.force_pushdown = on;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET active_pg.stripe_pages = 1;
};
# a join makes the parallel plan pay; the filtered side is the slow one
my $slow = "SELECT count(*), sum(a.id) FROM big a JOIN big b USING (id) WHERE a.id % 3 = 0 "
  . "AND (a.id % 1000 <> 0 OR pg_sleep(0.01) IS NOT NULL)";
like($node->safe_psql('postgres', $parallel . "EXPLAIN (COSTS OFF) $slow"),
	qr/Parallel Custom Scan \(ActiveScan\)/, 'the slow scan is a parallel ActiveScan');
is($node->safe_psql('postgres', $parallel . $slow), $expected, 'parallel result before the crash');
@pids = disk_pids($node);
$h = $node->background_psql('postgres', on_error_stop => 0);
$h->query_safe($parallel);
$h->query_until(qr/started/, "\\echo started\n$slow;\n");
usleep(200_000);
kill 'KILL', $pids[2];
$out = $h->query("SELECT 'after'");
$err = $h->{stderr};
$h->quit;
like($out, qr/^\Q$expected\E\n/, 'a parallel scan losing a disk returns the right answer')
  or diag("stdout: $out\nstderr: $err");
ok(wait_for_restart($node, 4, $pids[2]), 'the launcher restarted the disk killed during the parallel scan');
is($node->safe_psql('postgres', $parallel . $slow), $expected, 'the next parallel query is correct');

# A backend keeps one connection per disk after a scan, for its next scan.
# A daemon restarted in between has closed its end: the next scan notices,
# connects anew and neither fails nor hands the disk's units to the host.
my $json = "EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*), sum(id) FROM big WHERE id % 3 = 0";
$h = $node->background_psql('postgres', on_error_stop => 0);
$h->query_safe("SET active_pg.force_pushdown = on");
$h->query_safe("SET max_parallel_workers_per_gather = 0");
$h->query_safe($json);
like($h->query_safe($json), qr/"Disk Connections Opened": 0,\s*"Disk Connections Reused": 4/,
	'the session\'s next scan reuses its connections');
@pids = disk_pids($node);
kill 'KILL', $pids[3];
ok(wait_for_restart($node, 4, $pids[3]), 'the launcher restarted the disk killed between two scans');
$out = $h->query_safe($json);
like($out, qr/"Disk Connections Opened": 1,\s*"Disk Connections Reused": 3/,
	'a restarted disk gets a new connection, the others are reused');
unlike($out, qr/"Disks Taken Over": [1-9]/, 'and nothing is taken over');
is($h->query_safe("SELECT count(*), sum(id) FROM big WHERE id % 3 = 0"), $expected,
	'the result is right');
$h->quit;

# statement_timeout cancels a pushed-down scan cleanly
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{
SET active_pg.force_pushdown = on;
SET statement_timeout = '30ms';
SELECT count(*) FROM big a, big b WHERE a.id = b.id AND a.id % 2 = 0;
});
like($stderr, qr/canceling statement due to statement timeout/, 'statement_timeout cancels');
is($node->safe_psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*), sum(id) FROM big WHERE id % 3 = 0"),
	$expected, 'correct after a cancel');

# all disks down: the host reads every stripe unit itself (takeover), the
# answer is stock's, and the server log names the disk and why
$node->append_conf('postgresql.conf', "active_pg.disks = 'unix:/nonexistent/disk.sock'\nactive_pg.connect_timeout = 200\n");
$node->reload;
$logstart = -s $node->logfile;
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*), sum(id) FROM big WHERE id % 3 = 0");
is($ret, 0, 'a query against an unreachable disk completes');
is($stdout, $expected, 'with the host reading the unreachable disk\'s units') or diag($stderr);
like($stderr, qr/WARNING:  no active_pg disk could complete a scan of "big"; the host reads the relation itself/,
	'every disk gone: the backend warns');
like(slurp_file($node->logfile, $logstart),
	qr/active_pg disk 0 failed before sending rows of "big" \(could not connect: .*\); the host reads its \d+ blocks/,
	'the server log names the disk and why');

$node->stop;
done_testing();
