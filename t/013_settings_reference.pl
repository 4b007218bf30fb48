# README's configuration table says what the server says: every active_pg.*
# setting of pg_settings has a row, and each row's type, default, range and
# context are the server's.  The settings are defined by one table in
# extension/guc.c; this keeps the reference a user reads in step with it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ActivePg::Disks;

my $src = $ENV{ACTIVE_PG_SRC} // "$FindBin::Bin/..";

# The rows of README's table under "## Configuration": name => [cells].
my %readme;
open(my $fh, '<', "$src/README.md") or die "README.md: $!";
my $in = 0;
while (my $line = <$fh>)
{
	$in = 1 if $line =~ /^## Configuration/;
	last if $in && $line =~ /^## / && $line !~ /^## Configuration/;
	next unless $in && $line =~ /^\| `([a-z_]+)` \|/;
	my $name = $1;
	my @cells = map { s/^\s+|\s+$//gr } split /\|/, $line;
	shift @cells;    # before the first bar
	$readme{"active_pg.$name"} = [ @cells[ 1 .. 4 ] ];
}
close $fh;

# A README quantity ("1MB", "30s", "0.45", "on") in the setting's own unit.
my %bytes = (B => 1, kB => 1024, MB => 1024**2, GB => 1024**3, TB => 1024**4);
my %ms = (ms => 1, s => 1000, min => 60_000, h => 3_600_000, d => 86_400_000);
sub in_unit
{
	my ($text, $unit) = @_;
	$unit //= '';
	$text =~ s/^\s+|\s+$//g;
	return $text unless $text =~ /^(-?[0-9.]+)\s*([A-Za-z]*)$/;
	my ($n, $u) = ($1, $2);
	return $n + 0 if $u eq '';
	if (exists $bytes{$u} && exists $bytes{$unit})
	{
		return $n * $bytes{$u} / $bytes{$unit};
	}
	if (exists $ms{$u} && exists $ms{$unit})
	{
		return $n * $ms{$u} / $ms{$unit};
	}
	return "$n$u";
}

sub same
{
	my ($x, $y) = @_;
	return $x eq $y
	  unless $x =~ /^-?[0-9.e+]+$/ && $y =~ /^-?[0-9.e+]+$/;
	return abs($x - $y) <= 1e-9 * (abs($x) + abs($y));
}

my $node = active_node('settings_reference', "active_pg.ndisks = 1\n");
$node->start;
my $rows = $node->safe_psql(
	'postgres', q{
SELECT name, vartype, coalesce(unit, ''), boot_val, coalesce(min_val, ''),
       coalesce(max_val, ''), context
FROM pg_settings WHERE name LIKE 'active\_pg.%' ORDER BY name});

my %context = (
	user => 'user',
	superuser => 'superuser',
	reload => 'sighup',
	restart => 'postmaster');
my %type = (
	bool => 'bool',
	int => 'integer',
	real => 'real',
	enum => 'enum',
	string => 'string');

my %seen;
for my $row (split /\n/, $rows)
{
	my ($name, $vartype, $unit, $boot, $min, $max, $ctx) = split /\|/, $row, -1;
	$seen{$name} = 1;
	my $r = $readme{$name};
	ok($r, "$name has a row in README") or next;
	my ($rtype, $rdefault, $rrange, $rcontext) = @$r;

	my ($t) = $rtype =~ /^(\w+)/;
	is($type{$t} // $t, $vartype, "$name: type");

	# "0 (off)", "''", "on": the first word, parentheses dropped
	my $d = $rdefault =~ s/\s*\(.*\)//r;
	$d = '' if $d eq "''";
	$boot = 'on' if $vartype eq 'bool' && $boot eq 'on';
	ok(same(in_unit($d, $unit), in_unit($boot, $unit)),
		"$name: default (README $rdefault, server $boot)");

	if ($vartype eq 'integer' || $vartype eq 'real')
	{
		# "8kB – 8MB", "0 (no limit) or 4s – 1h", "1 – 131072, a power of two"
		my $range = $rrange =~ s/\s*\([^)]*\)//gr;
		$range =~ s/[:,].*$//;
		my ($lo, $hi);
		if ($range =~ /^(\S+) or \S+ – (\S+)$/)
		{
			($lo, $hi) = ($1, $2);
		}
		elsif ($range =~ /^(\S+) – (\S+)$/)
		{
			($lo, $hi) = ($1, $2);
		}
		ok(defined $lo && same(in_unit($lo, $unit), $min),
			"$name: minimum (README $rrange, server $min)");
		ok(defined $hi && same(in_unit($hi, $unit), $max),
			"$name: maximum (README $rrange, server $max)");
	}
	my ($c) = $rcontext =~ /^(\w+)/;
	is($context{$c} // $c, $ctx, "$name: context");
}
for my $name (sort keys %readme)
{
	ok($seen{$name}, "README's $name is a setting of the server");
}
$node->stop;
done_testing();
