# The generated regression test sql/060_tpch_plans.sql is in sync with its
# sources (bench/tpcd/schema.sql and bench/tpcd/queries/*.sql): the plan
# shapes it pins are those of the queries the benchmark really runs.  If this
# fails, run scripts/gen_tpch_plan_test.py and regenerate
# expected/060_tpch_plans.out from a real run.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = $ENV{ACTIVE_PG_SRC} // '.';
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'python3', "$src/scripts/gen_tpch_plan_test.py", '--check' ],
	'>', \$out, '2>', \$err);
ok($ok, 'sql/060_tpch_plans.sql is generated from the current TPC-H queries')
  or diag($err);
done_testing();
