# Daemons started by hand (active_pg.disks) over loopback TCP with a shared
# secret: results match, a wrong secret is refused with a clear error, and the
# launcher starts no daemons of its own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('manual');
$node->init;
my $p1 = PostgreSQL::Test::Cluster::get_free_port();
my $p2 = PostgreSQL::Test::Cluster::get_free_port();
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'active_pg'
active_pg.disks = 'tcp:127.0.0.1:$p1,tcp:127.0.0.1:$p2'
active_pg.disk_secret = 's3cret'
});
$node->start;

my $bindir = `pg_config --bindir`;
chomp $bindir;
my @daemons;
for my $i (0, 1)
{
	my $port = $i == 0 ? $p1 : $p2;
	my $log = $node->basedir . "/diskd$i.log";
	my $h = IPC::Run::start(
		[ "$bindir/diskd", '-D', $node->data_dir, '--listen', "127.0.0.1:$port",
		  '--disk-id', $i, '--secret', 's3cret' ],
		'>', $log, '2>&1');
	push @daemons, $h;
}
usleep(300_000);

$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE m (a int, b text);
INSERT INTO m SELECT g, 'b' || (g % 17) FROM generate_series(1, 100000) g;
});

is($node->safe_psql('postgres', 'SELECT count(*) FROM active_pg.disks() WHERE alive'),
	'2', 'two hand-started disks answer');
ok(!-d $node->data_dir . '/active_pg' || !glob($node->data_dir . '/active_pg/*.sock'),
	'the launcher started no daemons');
my $off = $node->safe_psql('postgres',
	"SET active_pg.enable = off; SELECT count(*), sum(a) FROM m WHERE b = 'b3'");
like($node->safe_psql('postgres',
	"SET active_pg.force_pushdown = on; EXPLAIN (COSTS OFF) SELECT count(*) FROM m WHERE b = 'b3'"),
	qr/Active(Scan|Agg)/, 'the scan is pushed down');
is($node->safe_psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*), sum(a) FROM m WHERE b = 'b3'"),
	$off, 'same result over TCP disks');

$node->append_conf('postgresql.conf', "active_pg.disk_secret = 'wrong'\n");
$node->reload;
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*) FROM m WHERE b = 'b3'",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a wrong secret fails the query');
like($stderr, qr/28P01/, 'with SQLSTATE invalid_password') or diag($stderr);
like($stderr, qr/active_pg disk 0/, 'naming the disk') or diag($stderr);

$_->kill_kill for @daemons;
$node->stop;
done_testing();
