# active_pg: PGXS build of the extension, plus a sub-make for diskd, plus the
# protobuf-c code generated from proto/active_pg.proto (linked into both).
#
#   make              build extension and diskd
#   make install      install active_pg.so, the SQL scripts and the disk
#                     daemon as bin/active_pg_diskd (next to postgres)
#   make uninstall    remove all of them again
#   make installcheck the regression tests against a running server that
#                     preloads active_pg with active_pg.ndisks = 4
#   make test         the whole test suite (scripts/test.sh; as root it also
#                     installs packages and runs the suite as user postgres)
#   make bench        the benchmark (bench/tpcd/run)

EXTENSION = active_pg
MODULE_big = active_pg
DATA = $(wildcard sql/active_pg--*.sql)
PGFILEDESC = "active_pg - active disk pushdown for PostgreSQL"

EXT_OBJS = extension/active_pg.o extension/guc.o extension/shippable.o \
	extension/shippable_tables.o extension/shippable_quals.o \
	extension/planner.o extension/encode.o extension/transport.o \
	extension/diskaddr.o \
	extension/activescan.o extension/explain.o extension/explain_text.o extension/launcher.o \
	extension/bloom_planner.o extension/bloom_keys.o extension/bloom_filter.o extension/bloom_exec.o extension/bloom_share.o \
	extension/bloom_measure.o extension/bloom_explain.o \
	extension/disk_conversation.o extension/rowview.o extension/agg_planner.o extension/agg_exec.o extension/agg_merge.o extension/agg_spill.o \
	extension/model.o extension/plan_memo.o \
	extension/parallel.o extension/monitor.o extension/layout_check.o
OBJS = $(EXT_OBJS) proto/active_pg.pb-c.o proto/ap_frame_check.o proto/ap_auth.o \
	common/visibility.o

PG_CPPFLAGS = -Iproto -Icommon -Iextension
PG_CFLAGS = -Wall -Werror -Wno-declaration-after-statement
SHLIB_LINK = -lprotobuf-c

# Regression tests (sql/, expected/): `make installcheck` runs them against a
# running server configured as scripts/regress.conf is (active_pg preloaded,
# active_pg.ndisks = 4, max_prepared_transactions >= 2); scripts/test.sh starts
# such a server and runs installcheck.  001_setup creates the extension.
REGRESS = $(patsubst sql/%.sql,%,$(filter-out sql/active_pg--%,$(sort $(wildcard sql/*.sql))))

EXTRA_CLEAN = proto/active_pg.pb-c.c proto/active_pg.pb-c.h .pg_build_id

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# pg_config's CFLAGS name the warnings of the compiler PostgreSQL was built
# with; PostgreSQL 18 from a build with a newer gcc names
# -Wmissing-variable-declarations, which gcc 12 rejects.  Drop such a flag
# when this compiler does not know it (clang and newer gcc keep it).
ifneq ($(filter -Wmissing-variable-declarations,$(CFLAGS)),)
ifneq ($(shell $(CC) -Werror -Wmissing-variable-declarations -x c -c -o /dev/null /dev/null 2>/dev/null && echo yes),yes)
override CFLAGS := $(filter-out -Wmissing-variable-declarations,$(CFLAGS))
endif
endif

proto/active_pg.pb-c.c proto/active_pg.pb-c.h: proto/active_pg.proto
	cd proto && protoc-c --c_out=. active_pg.proto

$(EXT_OBJS) proto/active_pg.pb-c.o proto/ap_frame_check.o \
$(EXT_OBJS:.o=.bc) proto/active_pg.pb-c.bc proto/ap_frame_check.bc: proto/active_pg.pb-c.h

# Objects compiled against one PostgreSQL must not be linked for another: a
# stamp naming the pg_config in use changes when it does, and every object
# depends on it (scripts/test.sh builds the same tree for 15 and then 18).
PG_BUILD_ID := $(PG_CONFIG) $(shell $(PG_CONFIG) --version)
ifneq ($(PG_BUILD_ID),$(shell cat .pg_build_id 2>/dev/null))
$(shell echo '$(PG_BUILD_ID)' > .pg_build_id)
endif
$(OBJS) $(OBJS:.o=.bc): .pg_build_id

# PGXS tracks no header dependencies: a struct that changes in a header must
# rebuild every object that may use it, or a stale object reads wrong offsets.
$(EXT_OBJS): $(wildcard extension/*.h) $(wildcard proto/*.h) $(wildcard common/*.h)

all: diskd-build
diskd-build: proto/active_pg.pb-c.c proto/active_pg.pb-c.h
	$(MAKE) -C diskd

# The daemon's installed name carries the extension's, so that it cannot
# collide with another program in PostgreSQL's bin directory.
install: install-diskd
install-diskd: diskd-build
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) diskd/diskd '$(DESTDIR)$(bindir)/active_pg_diskd'

uninstall: uninstall-diskd
uninstall-diskd:
	rm -f '$(DESTDIR)$(bindir)/active_pg_diskd'

clean: clean-diskd
clean-diskd:
	$(MAKE) -C diskd clean

test:
	scripts/test.sh

bench:
	bench/tpcd/run

.PHONY: diskd-build install-diskd uninstall-diskd clean-diskd test bench
