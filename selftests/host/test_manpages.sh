#!/bin/bash
# Host test (TAP): every man page in build/man renders with `man -l` without
# a warning, and every tool's --help lists the same set of long options as
# its man page (man/*.scd is the one source; see Documentation/packaging.md);
# every long option of `exacluster --help` and of each subcommand's --help
# is in exacluster(1), and every EXACLUSTER_* variable tools/cluster/*.py
# reads is named in exacluster(1) and in `exacluster --help`.
# Installed as build/host-tests/test_manpages by packaging/build.mk.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$HERE/.." && pwd)}
TOP=${TOP:-$(cd "$BUILD/.." && pwd)}
EXACLUSTER=$TOP/tools/cluster/exacluster
MAN=$BUILD/man
BIN=$BUILD/bin
TOOLS=(exanetctl:8 exanet-ipd:8 exanet-pingpong:1 exanet-rdma-bw:1 exanet-rdma-lat:1 udp-pingpong:1
	rma2-pingpong:1 rma2-bw:1 velo2-pingpong:1 exanet-mpi-bench:1)
# pages checked for rendering only (exanet-evb has no --help; exacluster
# is checked below)
LIBPAGES=(libexanet.3 exanet_open.3 exanet_send.3 exanet_recv.3 exanet_event_arm.3 exanet_reg_mr.3
	exanet_rdma_post_write.3 exanet_coll_start.3 librma2.3 rma2_open.3 rma2_register.3
	rma2_post_put_bt.3 rma2_noti_probe.3 libvelo2.3 fi_exanet.7 fi_extoll.7 coll-exanet.7
	exanet-evb.1 exacluster.1)

if ! command -v man >/dev/null || [ ! -d "$MAN" ]; then
	echo "1..0 # SKIP man or $MAN missing (make deps; make man)"
	exit 0
fi
pages=()
for t in "${TOOLS[@]}"; do pages+=("${t%%:*}.${t##*:}"); done
pages+=("${LIBPAGES[@]}")
echo "1..$(( ${#pages[@]} + ${#TOOLS[@]} + 3 ))"
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
# exacluster: the options of the launcher and of every subcommand, and the
# EXACLUSTER_* variables of tools/cluster/*.py
man_text=$(LC_ALL=C MANWIDTH=400 man -l "$MAN/exacluster.1" 2>/dev/null | col -b)
m=$(longopts <<<"$man_text")
if top_help=$(python3 "$EXACLUSTER" --help 2>&1); then
	subs=$(sed -n 's/^ *{\([a-z,-]*\)}.*/\1/p' <<<"$top_help" | head -n 1 | tr , ' ')
	help_all=$top_help bad=
	for sub in $subs; do
		h=$(python3 "$EXACLUSTER" "$sub" --help 2>&1) || bad="$bad $sub"
		help_all+=$'\n'"$h"
	done
	missing=$(comm -23 <(longopts <<<"$help_all") <(echo "$m"))
	if [ -n "$subs" ] && [ -z "$bad" ] && [ -z "$missing" ]; then
		ok "exacluster: the long options of --help and of $(wc -w <<<"$subs") subcommands' --help are in exacluster(1)"
	else
		notok "exacluster: --help options missing from exacluster(1)${bad:+ (--help failed:$bad)}"
		printf '#   %s\n' $missing
	fi
else
	notok "exacluster --help fails"
fi
# the variables the code reads: os.environ.get("EXACLUSTER_X"...), os.environ["EXACLUSTER_X"]
vars=$(grep -ohE "environ(\.get\(|\[) *[\"']EXACLUSTER_[A-Z0-9_]+" "$TOP"/tools/cluster/*.py |
	grep -oE 'EXACLUSTER_[A-Z0-9_]+' | sort -u)
for where in "exacluster(1)" "exacluster --help"; do
	if [ "$where" = "exacluster(1)" ]; then text=$man_text; else text=$top_help; fi
	missing=$(comm -23 <(echo "$vars") <(grep -oE 'EXACLUSTER_[A-Z0-9_]+' <<<"$text" | sort -u))
	if [ -n "$vars" ] && [ -z "$missing" ]; then
		ok "$where names the $(wc -l <<<"$vars") EXACLUSTER_* variables of tools/cluster/*.py"
	else
		notok "$where lacks EXACLUSTER_* variables"
		printf '#   %s\n' $missing
	fi
done
exit $fail
