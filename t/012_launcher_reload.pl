# What the launcher's daemons were started with follows the configuration: a
# reload that changes the disk secret restarts them with the new one (and
# the backends, which prove the daemons know it, keep reaching them); a
# reload that sets active_pg.disks (hand-started disks) stops them, and one
# that clears it starts them again.  Neither counts as a restart in
# active_pg.disk_stats.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;
use Time::HiRes qw(usleep);

my $node = active_node('reload', qq{
active_pg.ndisks = 2
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION active_pg');

my @before = wait_for_disks($node, 2);
is(scalar(@before), 2, 'the launcher runs 2 disk daemons');

# a new secret: the daemons restart with it and still answer
my $logstart = -s $node->logfile;
$node->safe_psql('postgres', "ALTER SYSTEM SET active_pg.disk_secret = 'n3w-secret'");
$node->reload;
my @after;
for (1 .. 100)
{
	@after = disk_pids($node);
	last if @after == 2 && !grep { my $p = $_; grep { $_ == $p } @before } @after;
	usleep(100_000);
}
is(scalar(@after), 2, 'two daemons after the new secret');
ok(!grep({ my $p = $_; grep { $_ == $p } @before } @after), 'both were restarted');
ok($node->poll_query_until('postgres',
	'SELECT count(*) = 2 FROM active_pg.disks() WHERE alive'),
	'the backends reach the daemons with the new secret');
like(slurp_file($node->logfile, $logstart),
	qr/active_pg launcher stops its disks for a new disk secret/, 'the log says why');

# hand-started disks replace the launcher's: its daemons stop ...
$logstart = -s $node->logfile;
$node->safe_psql('postgres', "ALTER SYSTEM SET active_pg.disks = 'unix:/nonexistent/disk.sock'");
$node->reload;
my @none;
for (1 .. 100)
{
	@none = disk_pids($node);
	last unless @none;
	usleep(100_000);
}
is(scalar(@none), 0, 'the launcher stops its daemons when active_pg.disks is set');
like(slurp_file($node->logfile, $logstart),
	qr/active_pg launcher stops its disks for active_pg.disks/, 'the log says why');

# ... and start again when it is cleared
$node->safe_psql('postgres', 'ALTER SYSTEM RESET active_pg.disks');
$node->reload;
is(scalar(wait_for_disks($node, 2)), 2, 'the launcher starts its daemons again');
ok($node->poll_query_until('postgres',
	'SELECT count(*) = 2 FROM active_pg.disks() WHERE alive'), 'and they answer');
is($node->safe_psql('postgres', 'SELECT sum(restarts) FROM active_pg.disk_stats'), '0',
	'reconfigurations are not counted as restarts');

$node->stop;
done_testing();
