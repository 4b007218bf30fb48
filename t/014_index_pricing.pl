# The host's nested loops over tables larger than shared_buffers are priced
# at measured speed (extension/planner.c, ap_price_index_paths): a probe
# that visits many scattered heap pages of such a table reads most of them
# from the page cache, which PostgreSQL's estimate leaves out.  With a
# shared_buffers of 1 MB, a 10 MB table is such a table: PostgreSQL alone
# joins it by a nested loop of index probes (100 rows on 100 pages each);
# with the extension the planner takes a hash join over a scan of the
# table (the host's own here: the disks' start outweighs so small a scan),
# and the answers agree.  A key whose rows lie together keeps PostgreSQL's plan.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;

my $node = active_node('index_pricing', qq{
active_pg.ndisks = 2
shared_buffers = 1MB
max_parallel_workers_per_gather = 0
random_page_cost = 1.1
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE dim (k int PRIMARY KEY, name text);
INSERT INTO dim SELECT g, 'k' || g FROM generate_series(0, 999) g;
CREATE TABLE scat AS SELECT g AS id, g % 1000 AS k, repeat('x', 60) AS pad
	FROM generate_series(1, 100000) g;
CREATE INDEX scat_k ON scat (k);
CREATE TABLE clus AS SELECT * FROM scat ORDER BY k, id;
CREATE INDEX clus_k ON clus (k);
VACUUM ANALYZE dim, scat, clus;
});
ok($node->poll_query_until('postgres',
	'SELECT count(*) = 2 FROM active_pg.disks() WHERE alive'), 'the disks answer');
is($node->safe_psql('postgres', 'SHOW shared_buffers'), '1MB', 'shared_buffers is 1 MB');

my $q = 'SELECT count(*), sum(s.id) FROM dim d JOIN scat s USING (k) WHERE d.k < 200';
my $qc = 'SELECT count(*), sum(s.id) FROM dim d JOIN clus s USING (k) WHERE d.k < 200';

sub plan_of
{
	my ($sql, $enable) = @_;
	return $node->safe_psql('postgres',
		"SET active_pg.enable = $enable; EXPLAIN (COSTS OFF) $sql");
}

my $stock = plan_of($q, 'off');
my $ours = plan_of($q, 'on');
like($stock, qr/Nested Loop/, 'PostgreSQL alone probes the scattered table in a nested loop');
like($ours, qr/Hash Join/, 'with the disks the scattered probes lose to a hash join');
unlike($ours, qr/Nested Loop/, '... and no nested loop is left');
is($node->safe_psql('postgres', "SET active_pg.enable = on; $q"),
	$node->safe_psql('postgres', "SET active_pg.enable = off; $q"),
	'the same answer with and without the disks');
is($node->safe_psql('postgres', $q), '20000|992090000', 'the answer itself');

like(plan_of($qc, 'off'), qr/Nested Loop/, 'clustered keys: PostgreSQL probes');
like(plan_of($qc, 'on'), qr/Nested Loop/, '... and keeps probing with the disks (two pages a probe)');
is($node->safe_psql('postgres', "SET active_pg.enable = on; $qc"),
	$node->safe_psql('postgres', "SET active_pg.enable = off; $qc"),
	'clustered keys: the same answer');

$node->stop;
done_testing();
