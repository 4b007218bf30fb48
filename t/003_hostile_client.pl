# A hostile or broken client talking to a disk daemon directly: garbage,
# oversized and truncated frames, wrong protocol version, requests naming
# relations that do not exist or attributes out of range.  Each gets an Error
# frame (or a closed connection) and the daemon keeps serving everyone else.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::UNIX;
use IO::Select;

my $node = PostgreSQL::Test::Cluster->new('hostile');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'active_pg'
active_pg.ndisks = 2
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION active_pg;
CREATE TABLE t (a int, b text);
INSERT INTO t SELECT g, 'b' || g FROM generate_series(1, 50000) g;
});
my $sock_path = $node->data_dir . '/active_pg/disk0.sock';
$node->poll_query_until('postgres',
	"SELECT bool_and(alive) FROM active_pg.disks()") or die "disks not up";

# --- a minimal protobuf encoder (varints and length-delimited fields) ---
sub varint
{
	my ($v) = @_;
	my $out = '';
	while ($v >= 0x80) { $out .= chr(($v & 0x7f) | 0x80); $v >>= 7; }
	return $out . chr($v);
}
sub fint { my ($f, $v) = @_; return varint($f << 3) . varint($v); }
sub fmsg { my ($f, $b) = @_; return varint(($f << 3) | 2) . varint(length $b) . $b; }
sub frame { my ($body) = @_; return pack('N', length $body) . $body; }

# Hello: protocol version 3 (proto/ap_wire.h), no nonce needed by a daemon without a secret
my $hello = frame(fmsg(1, fint(1, 3)));

# Connect, send raw bytes, read what comes back until EOF or timeout.
sub exchange
{
	my ($bytes, $close_after_send) = @_;
	my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $sock_path)
	  or die "connect $sock_path: $!";
	$s->syswrite($bytes) if length $bytes;
	shutdown($s, 1) if $close_after_send;
	my $sel = IO::Select->new($s);
	my $got = '';
	while ($sel->can_read(5))
	{
		my $n = $s->sysread(my $buf, 65536);
		last if !$n;
		$got .= $buf;
	}
	close $s;
	return $got;
}

# The frames in a reply; returns list of [first field tag byte, body].
sub frames
{
	my ($data) = @_;
	my @f;
	while (length($data) >= 4)
	{
		my $len = unpack('N', substr($data, 0, 4));
		last if length($data) < 4 + $len;
		push @f, substr($data, 4, $len);
		$data = substr($data, 4 + $len);
	}
	return @f;
}

# Frame.error is field 9 (tag byte 0x4a); Error.code is its field 1.
sub error_code
{
	my ($reply) = @_;
	for my $f (frames($reply))
	{
		next unless ord(substr($f, 0, 1)) == 0x4a;
		my $pos = 1;
		$pos++ while ord(substr($f, $pos, 1)) & 0x80;	# skip the length varint
		my $inner = substr($f, $pos + 1);
		return ord(substr($inner, 1, 1)) if ord(substr($inner, 0, 1)) == 0x08;
		return 0;
	}
	return undef;
}

sub disk_pid_alive
{
	my ($pids) = $node->safe_psql('postgres', 'SELECT count(*) FROM active_pg.disks() WHERE alive');
	return $pids;
}

is(error_code(exchange("\x00\x00\x00\x05\xff\xff\xff\xff\xff")), 1, 'garbage frame: protocol error');
is(error_code(exchange("\xff\xff\xff\xff")), 2, 'length 0xFFFFFFFF: frame too big, nothing allocated');
is(error_code(exchange("\x00\x00\x00\x00")), 1, 'zero-length frame: protocol error');
my $r = exchange("\x00\x00\x01\x00" . ("x" x 10), 1);
ok(defined $r, 'truncated frame: connection closed without a crash');
is(error_code(exchange(frame(fmsg(1, fint(1, 99))))), 3, 'wrong protocol version: unsupported');
is(error_code(exchange(frame(fmsg(3, fint(1, 1))))), 1, 'scan before hello: protocol error');

my $hello_reply = exchange($hello, 1);
is(ord(substr((frames($hello_reply))[0] // "\0", 0, 1)), 0x12, 'hello gets a HelloReply');

# ScanRequest fields: 1 scan_id, 2 rel{1 spc,2 db,3 rel}, 3 nblocks, 4 ndisks,
# 5 stripe_pages, 6 disk_id, 7 columns{3 attlen,4 attalign,5 byval,8 kind},
# 8 snapshot{1 xmin,2 xmax}, 9 program{2 project}
my $int4col = fmsg(7, fint(1, 23) . fint(3, 4) . fint(4, ord('i')) . fint(5, 1) . fint(8, 3));
my $snap = fmsg(8, fint(1, 3) . fint(2, 3));
sub scan
{
	my ($rel, $extra) = @_;
	return frame(fmsg(3, fint(1, 1) . fmsg(2, $rel) . fint(3, 1) . fint(4, 1)
		  . fint(5, 32) . fint(6, 0) . $int4col . $snap . $extra));
}
my $db = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $relfile = $node->safe_psql('postgres', "SELECT relfilenode FROM pg_class WHERE relname = 't'");

is(error_code(exchange($hello . scan(fint(1, 1663) . fint(2, $db) . fint(3, 4000000000), ''))),
	5, 'relation that does not exist: no-relation error');
is(error_code(exchange($hello . scan(fint(1, 1664) . fint(2, 0) . fint(3, 1262), ''))),
	4, 'global tablespace is refused: bad request');
is(error_code(exchange($hello . scan(fint(1, 1663) . fint(2, $db) . fint(3, $relfile),
	fmsg(9, fint(2, 7))))), 4, 'projected attribute out of range: bad request');
# Expr{op: OpExpr{op 99}} as the filter: unknown operator
is(error_code(exchange($hello . scan(fint(1, 1663) . fint(2, $db) . fint(3, $relfile),
	fmsg(9, fmsg(1, fmsg(3, fint(1, 99) . fint(2, 1) . fmsg(3, fint(1, 1)) . fmsg(3, fint(1, 1)))))))),
	3, 'unknown operator: unsupported');

is(disk_pid_alive(), 2, 'both disks still alive and answering');
is($node->safe_psql('postgres',
	"SET active_pg.force_pushdown = on; SELECT count(*) FROM t WHERE a % 2 = 0"),
	'25000', 'pushed-down queries still work');

$node->stop;
done_testing();
