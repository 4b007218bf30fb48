# The Bloom filter sizes one session works out serve the sessions after it
# (bloom_filter.c: a table in shared memory).  Sizing a filter for a new
# number of keys takes some 60,000 instructions; a plan of a fact table
# joined to three filtered dimensions sizes several.  The server runs
# under valgrind's callgrind, its backends followed (the disk daemons
# not), and each session's backend is counted whole (PostgresMain,
# inclusive): the first session to EXPLAIN the join pays for the sizes, a
# later one finds them.  Counts repeat to within a few thousand
# instructions; the bound below is a fraction of what the sizes cost.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;

skip_without_valgrind();

my $node = active_node('shared_bloom_sizes', "active_pg.ndisks = 2\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE d1 (id int PRIMARY KEY, a int);
CREATE TABLE d2 (id int PRIMARY KEY, a int);
CREATE TABLE d3 (id int PRIMARY KEY, a int);
CREATE TABLE f (k1 int, k2 int, k3 int, v int, pad text);
INSERT INTO d1 SELECT g, g % 100 FROM generate_series(1, 20000) g;
INSERT INTO d2 SELECT g, g % 7 FROM generate_series(1, 3000) g;
INSERT INTO d3 SELECT g, g % 10 FROM generate_series(1, 500) g;
INSERT INTO f SELECT g % 20000 + 1, g % 3000 + 1, g % 500 + 1, g, repeat('x', 60)
  FROM generate_series(1, 300000) g;
VACUUM ANALYZE;
CHECKPOINT;
});
my $query = 'SELECT sum(f.v) FROM f JOIN d1 ON f.k1 = d1.id JOIN d2 ON f.k2 = d2.id '
  . 'JOIN d3 ON f.k3 = d3.id WHERE d1.a < 3 AND d2.a = 3 AND d3.a < 5';
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) $query"),
	qr/Bloom Filter/, 'the join is planned with Bloom filters');
# The executor sizes each built filter through the same table: a later
# session's filters come from it, and the join's result stays stock's.
my $stock = $node->safe_psql('postgres', "SET active_pg.enable = off; $query");
isnt($stock, '', 'the join returns a sum');
is($node->safe_psql('postgres', $query), $stock, 'pushed down, the result is stock\'s');
is($node->safe_psql('postgres', $query), $stock, '... and again in a later session');
$node->stop;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $server = IPC::Run::start(
	[
		'valgrind', '--tool=callgrind', '--trace-children=yes',
		'--trace-children-skip=*diskd*', "--callgrind-out-file=$dir/cg.%p",
		'postgres', '-D', $node->data_dir, '-c', 'jit=off',
		'-c', 'max_parallel_workers_per_gather=0'
	],
	'>', "$dir/server.out", '2>', "$dir/server.out");
my $ready = 0;
for (1 .. 240)
{
	if (system('pg_isready', '-q', '-h', $node->host, '-p', $node->port) == 0)
	{
		$ready = 1;
		last;
	}
	sleep 1;
}
ok($ready, 'the server under callgrind accepts connections') or BAIL_OUT('no server');

# One session running $sql; its backend's pid.
sub session
{
	my ($sql) = @_;
	my $out = `psql -X -At -h @{[$node->host]} -p @{[$node->port]} -d postgres -c "SELECT pg_backend_pid()" -c "$sql" 2>&1`;
	die "session failed: $out" if $? != 0;
	return (split /\n/, $out)[0];
}

# The first sessions of a server rebuild the relation cache's init file,
# and the first to read the tables' catalog rows and statistics sets their
# hint bits: sessions that plan the join without Bloom filters come first.
session('SELECT 1') for 1 .. 2;
session("SET active_pg.enable_bloom = off; EXPLAIN $query") for 1 .. 2;
my @bare = map { session('SELECT 1') } 1 .. 2;
my $first = session("EXPLAIN $query");
my $later = session("EXPLAIN $query");
system('pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-w', 'stop') == 0
  or die 'could not stop the server';
$server->finish;

# A backend's instructions: PostgresMain's, inclusive.
sub session_count
{
	my ($pid) = @_;
	my $ann = `callgrind_annotate --inclusive=yes $dir/cg.$pid 2>/dev/null`;
	my ($n) = $ann =~ /^\s*([\d,]+) .*:PostgresMain[ \n]/m;
	die "no PostgresMain in the profile of $pid" unless defined $n;
	$n =~ s/,//g;
	return $n;
}

my $bare = (session_count($bare[0]) + session_count($bare[1])) / 2;
my $c_first = session_count($first) - $bare;
my $c_later = session_count($later) - $bare;
note(sprintf('EXPLAIN in the first session %.0f instructions, in a later one %.0f',
	$c_first, $c_later));
cmp_ok($c_first - $c_later, '>', 100000,
	'a later session finds the filter sizes the first one worked out');

done_testing();
