#!/bin/sh
# deps.sh - make sure the Debian packages in scripts/deps.txt are installed.
#
# Installs what is missing when run as root on a system with apt-get (running
# `apt-get update` once first); otherwise prints the exact command and fails.
set -eu
here=$(dirname "$0")
list="$here/deps.txt"

missing=""
for p in $(grep -v '^[[:space:]]*#' "$list" | tr -s ' \t' '\n' | sed '/^$/d'); do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "deps: all packages present ($(grep -vc '^[[:space:]]*#' "$list") checked)"
	exit 0
fi

echo "deps: missing:$missing"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	echo "deps: apt-get update"
	apt-get update -qq
	echo "deps: apt-get install -y --no-install-recommends$missing"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
	echo "deps: installed:$missing"
	exit 0
fi
echo "deps: run as root:  apt-get update && apt-get install -y$missing" >&2
exit 1
