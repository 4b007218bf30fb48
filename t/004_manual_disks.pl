# Daemons started by hand (active_pg.disks) over loopback TCP with a shared
# secret read from a 0600 file: results match; the daemon and the host each
# prove they know the secret, which never crosses the wire; a wrong secret
# and an impostor daemon are refused with clear errors; the secret is never
# accepted on the command line or from a file others can read; the launcher
# starts no daemons of its own.
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
my $secret_file = $node->basedir . '/disk.secret';
open(my $sf, '>', $secret_file) or die;
print $sf "s3cret\n";
close $sf;
chmod 0644, $secret_file;

# the secret is refused on the command line and from a file others can read
my ($out, $err) = ('', '');
IPC::Run::run([ "$bindir/active_pg_diskd", '-D', $node->data_dir, '--listen', "127.0.0.1:$p1",
	'--secret', 's3cret' ], '>', \$out, '2>', \$err);
like($err, qr/--secret is not accepted: a command line is visible to every local user/,
	'diskd refuses a secret on its command line');
IPC::Run::run([ "$bindir/active_pg_diskd", '-D', $node->data_dir, '--listen', "127.0.0.1:$p1",
	'--secret-file', $secret_file ], '>', \$out, '2>', \$err);
like($err, qr/has group or other permissions \(mode 0644\); use chmod 0600/,
	'diskd refuses a secret file others can read');
chmod 0600, $secret_file;

my @daemons;
for my $i (0, 1)
{
	my $port = $i == 0 ? $p1 : $p2;
	my $log = $node->basedir . "/diskd$i.log";
	my $h = IPC::Run::start(
		[ "$bindir/active_pg_diskd", '-D', $node->data_dir, '--listen', "127.0.0.1:$port",
		  '--disk-id', $i, '--secret-file', $secret_file ],
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
like($stderr, qr/active_pg disk 0 failed to prove that it knows active_pg.disk_secret/,
	'naming the disk') or diag($stderr);

# an impostor on a disk's port, without the secret: the host never trusts it
$_->kill_kill for @daemons;
$node->append_conf('postgresql.conf', "active_pg.disk_secret = 's3cret'\n");
$node->reload;
my $impostor = IPC::Run::start(
	[ "$bindir/active_pg_diskd", '-D', $node->data_dir, '--listen', "127.0.0.1:$p1", '--disk-id', 0 ],
	'>', $node->basedir . '/impostor.log', '2>&1');
my $second = IPC::Run::start(
	[ "$bindir/active_pg_diskd", '-D', $node->data_dir, '--listen', "127.0.0.1:$p2", '--disk-id', 1,
	  '--secret-file', $secret_file ],
	'>', $node->basedir . '/diskd1b.log', '2>&1');
usleep(300_000);
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*) FROM m WHERE b = 'b3'",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a disk that cannot prove the secret fails the query');
like($stderr, qr/28P01.*active_pg disk 0 did not prove that it knows active_pg.disk_secret/s,
	'the impostor is named, its rows never read') or diag($stderr);
$impostor->kill_kill;
$second->kill_kill;
$node->stop;
done_testing();
