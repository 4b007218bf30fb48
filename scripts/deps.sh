#!/bin/bash
# Install the Debian 12 packages active_pg needs to build, test and benchmark.
# Idempotent: installs only what is missing.  Needs root or sudo.  Extra
# package names on the command line are installed too.  valgrind counts
# instructions (t/015_oltp_instructions.pl, bench/oltp/run --instructions).
set -euo pipefail

PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-contrib-15 postgresql-client-15
      liburing-dev libprotobuf-c-dev protobuf-c-compiler libipc-run-perl
      build-essential make gcc pkg-config perl rsync python3
      clang libclang-rt-14-dev valgrind "$@")

missing=()
for p in "${PKGS[@]}"; do
	# postgresql-contrib-15 is virtual on some releases; accept either name
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		if [ "$p" = postgresql-contrib-15 ] && \
		   dpkg-query -W -f='${Status}' postgresql-contrib 2>/dev/null | grep -q "install ok installed"; then
			continue
		fi
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
echo "active_pg: installing missing packages: ${missing[*]}" >&2
# The Debian package would start a default cluster; we never use it.
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
