# Shared helpers for scripts/*.sh and bench/tpcd/run (sourced, not executed).

# The PostgreSQL installation to build and test against: PG_CONFIG names its
# pg_config (default: Debian's PostgreSQL 15; scripts/pg18.sh prints the one
# of PostgreSQL 18).  Everything else is asked of that pg_config.
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_BINDIR=$("$PG_CONFIG" --bindir)
PG_PGXS_DIR=$(dirname "$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")")
PG_MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
export PATH="$PG_BINDIR:$PATH"

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

# Run a command as the unprivileged user that owns test clusters (PostgreSQL
# refuses to run as root).
as_pguser() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env PATH="$PATH" "$@"
	else
		"$@"
	fi
}

# Build and install the extension and diskd from the tree in $1, one compiler
# per core.
build_and_install() {
	local src=$1
	make -C "$src" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >/dev/null
	$SUDO make -C "$src" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
}

# Copy the source tree somewhere the test user may write.
stage_tree() {
	local src=$1 dst=$2
	rm -rf "$dst"
	mkdir -p "$dst"
	rsync -a --exclude .git --exclude 'tmp_check*' --exclude results "$src"/ "$dst"/
	if [ "$(id -u)" -eq 0 ]; then
		chown -R postgres:postgres "$dst"
	fi
}
