#!/bin/bash
# Host test (TAP): every man page in build/man renders with `man -l` without
# a warning, and every tool's --help lists the same set of long options as
# its man page (man/*.scd is the one source; see Documentation/packaging.md).
# Installed as build/host-tests/test_manpages by packaging/build.mk.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$HERE/.." && pwd)}
MAN=$BUILD/man
BIN=$BUILD/bin
TOOLS=(exanetctl:8 exanet-ipd:8 exanet-pingpong:1 exanet-rdma-bw:1 exanet-rdma-lat:1 udp-pingpong:1
	rma2-pingpong:1 rma2-bw:1 velo2-pingpong:1)
LIBPAGES=(libexanet.3 exanet_open.3 exanet_send.3 exanet_recv.3 exanet_event_arm.3 exanet_reg_mr.3
	exanet_rdma_post_write.3 exanet_coll_start.3 librma2.3 libvelo2.3 fi_exanet.7)

if ! command -v man >/dev/null || [ ! -d "$MAN" ]; then
	echo "1..0 # SKIP man or $MAN missing (make deps; make man)"
	exit 0
fi
pages=()
for t in "${TOOLS[@]}"; do pages+=("${t%%:*}.${t##*:}"); done
pages+=("${LIBPAGES[@]}")
echo "1..$(( ${#pages[@]} + ${#TOOLS[@]} ))"
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }

# Long options in a text: --word, not the bare "--" separator.
longopts() { grep -oE -- '(^|[^[:alnum:]-])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u; }

for p in "${pages[@]}"; do
	if [ ! -s "$MAN/$p" ]; then notok "render $p: missing"; continue; fi
	err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$MAN/$p" 2>&1 >/dev/null)
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$MAN/$p" 2>/dev/null | wc -l)
	if [ -z "$err" ] && [ "$out" -gt 5 ]; then
		ok "render $p ($out lines)"
	else
		notok "render $p"; printf '#   %s\n' "$err"
	fi
done

for t in "${TOOLS[@]}"; do
	tool=${t%%:*} sec=${t##*:}
	help=$("$BIN/$tool" --help 2>&1); rc=$?
	if [ $rc -ne 0 ]; then notok "$tool --help exits $rc"; continue; fi
	h=$(longopts <<<"$help")
	# Wide rendering: no line breaks inside an option name.
	m=$(LC_ALL=C MANWIDTH=400 man -l "$MAN/$tool.$sec" 2>/dev/null | col -b | longopts)
	if [ -n "$h" ] && [ "$h" = "$m" ]; then
		ok "$tool: --help and $tool($sec) list the same $(wc -l <<<"$h") long options"
	else
		notok "$tool: --help and $tool($sec) differ"
		diff <(echo "$h") <(echo "$m") | sed -n 's/^\([<>]\)/#   \1/p'
		echo "#   (< only in --help, > only in the man page)"
	fi
done
exit $fail
