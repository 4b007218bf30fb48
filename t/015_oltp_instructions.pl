# What OLTP statements pay for the extension, counted in instructions
# (bench/oltp/run --instructions measures the same at scale): a point
# lookup and a keyed join of three tables, pgbench's shapes, each run 300
# times in a single-user backend under valgrind's callgrind with active_pg
# preloaded and without, the start-up's count (an empty script) subtracted.
# Counts repeat to within a few instructions, so the bounds below hold
# exactly what the planner hooks may cost: a point lookup leaves the set
# rel pathlist hook at its cheap-path test (about 700 instructions over
# PostgreSQL's 100,000), and a join search over tables none of which has an
# ActiveScan is PostgreSQL's own, the Bloom join hook idle (about 3,000
# over 780,000; 15,000 when the hook checked every pair's sides).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Temp qw(tempdir);
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;

skip_without_valgrind();

my $node = active_node('oltp_instructions', "active_pg.ndisks = 2\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
CREATE TABLE branches (bid int PRIMARY KEY, bbalance int, filler char(88));
CREATE TABLE tellers (tid int PRIMARY KEY, bid int, tbalance int, filler char(84));
INSERT INTO branches SELECT g, 0 FROM generate_series(1, 10) g;
INSERT INTO tellers SELECT g, (g - 1) / 10 + 1, 0 FROM generate_series(1, 100) g;
INSERT INTO accounts SELECT g, (g - 1) / 10000 + 1, 0 FROM generate_series(1, 100000) g;
VACUUM (FREEZE, ANALYZE);
CHECKPOINT;
});
$node->stop;

my $dir = tempdir(CLEANUP => 1);
my $n = 300;
my %scripts = (empty => '', lookup => '', join => '');
for my $i (1 .. $n)
{
	my $aid = ($i * 7919) % 100000 + 1;
	my $tid = ($i * 31) % 100 + 1;
	$scripts{lookup} .= "SELECT abalance FROM accounts WHERE aid = $aid;\n";
	$scripts{join} .= "SELECT a.abalance, b.bbalance, t.tbalance FROM accounts a "
	  . "JOIN branches b ON a.bid = b.bid JOIN tellers t ON t.bid = b.bid "
	  . "WHERE a.aid = $aid AND t.tid = $tid;\n";
}
for my $s (keys %scripts)
{
	open(my $fh, '>', "$dir/$s.sql") or die;
	print $fh $scripts{$s};
	close $fh;
}

# All instructions of a single-user backend running $script.
sub count
{
	my ($with, $script) = @_;
	my $out = "$dir/callgrind.out";
	my $preload = $with ? 'active_pg' : '';
	my $rc = system("valgrind --tool=callgrind --callgrind-out-file=$out "
		  . "postgres --single -D " . $node->data_dir
		  . " -c shared_preload_libraries=$preload -c jit=off postgres"
		  . " < $dir/$script.sql > $dir/$script.out 2>&1");
	die "single-user backend failed ($script): " . slurp_file("$dir/$script.out")
	  if $rc != 0;
	die "an error in $script: " . slurp_file("$dir/$script.out")
	  if slurp_file("$dir/$script.out") =~ /ERROR/;
	my ($total) = slurp_file($out) =~ /^(?:totals|summary): (\d+)/m;
	unlink $out;
	return $total;
}

my %per;
for my $with (0, 1)
{
	my $base = count($with, 'empty');
	for my $s ('lookup', 'join')
	{
		$per{$with}{$s} = (count($with, $s) - $base) / $n;
	}
}
for my $s ('lookup', 'join')
{
	note(sprintf("%s: %.0f instructions a statement without active_pg, %.0f with",
		$s, $per{0}{$s}, $per{1}{$s}));
}
cmp_ok($per{1}{lookup} - $per{0}{lookup}, '<', 2000,
	'a point lookup costs the extension under 2,000 instructions');
cmp_ok($per{1}{join} - $per{0}{join}, '<', 8000,
	'a keyed join of three tables without ActiveScans costs it under 8,000');
cmp_ok($per{1}{join} / $per{0}{join}, '<', 1.02, '... under 2% of the statement');

done_testing();
