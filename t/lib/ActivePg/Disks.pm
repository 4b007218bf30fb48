# Helpers shared by the TAP tests: the disk daemons of a test node.
package ActivePg::Disks;

use strict;
use warnings;
use Exporter 'import';
use Time::HiRes qw(usleep);
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(active_node disk_pids wait_for_disks wait_for_restart skip_without_valgrind);

# A new node that preloads active_pg, initialized but not started, with
# $conf (postgresql.conf lines) appended.
sub active_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'active_pg'\n" . ($conf // ''));
	return $node;
}

# The pids of the diskd processes serving $node's data directory, sorted.
sub disk_pids
{
	my ($node) = @_;
	my $dd = $node->data_dir;
	my @pids;
	for my $p (glob('/proc/[0-9]*'))
	{
		open(my $fh, '<', "$p/cmdline") or next;
		local $/;
		my $cmd = <$fh> // '';
		close $fh;
		my @argv = split /\0/, $cmd;
		next unless @argv && $argv[0] =~ /diskd$/;
		next unless grep { $_ eq $dd } @argv;
		push @pids, ($p =~ m{/(\d+)$})[0];
	}
	return sort { $a <=> $b } @pids;
}

# Wait up to 10 s until $n daemons serve $node; their pids.
sub wait_for_disks
{
	my ($node, $n) = @_;
	my @pids;
	for (1 .. 100)
	{
		@pids = disk_pids($node);
		last if @pids == $n;
		usleep(100_000);
	}
	return @pids;
}

# Wait up to 10 s until $n daemons serve $node and $pid is not one of
# them (the launcher replaced the daemon that had it); true if so.
sub wait_for_restart
{
	my ($node, $n, $pid) = @_;
	for (1 .. 100)
	{
		my @now = disk_pids($node);
		return 1 if @now == $n && !grep { $_ == $pid } @now;
		usleep(100_000);
	}
	return 0;
}

# Skip the whole test where valgrind (the instruction counts' tool) is missing.
sub skip_without_valgrind
{
	return if system('valgrind --version >/dev/null 2>&1') == 0;
	Test::More::plan(skip_all => 'valgrind is not installed (scripts/deps.sh installs it)');
}

1;
