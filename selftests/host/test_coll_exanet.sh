#!/bin/bash
# Host test (TAP) of the Open MPI component coll/exanet (lib/coll-exanet,
# Documentation/exanet/coll-exanet.md), with Debian's Open MPI on this
# machine, nothing installed: Open MPI finds the component through
# OMPI_MCA_mca_base_component_path.
#
#   - ompi_info lists it, with its parameters;
#   - without /dev/exanet0 it declines and exanet_coll_check passes through
#     the other components; --mca coll ^exanet switches it off;
#   - with a stand-in libexanet that emulates the collective unit in shared
#     memory (coll_exanet_fakeni.c, first in LD_LIBRARY_PATH): the offload
#     path with 2 ranks on each of 2 "nodes" and 1 on each of 3, chunked
#     (coll_exanet_chunk_size=4096), every rank counting offloaded
#     operations; a node whose group creation fails (-ENOSPC) makes every
#     rank fall back; a NI without collective unit and a communicator on one
#     node are left to the other components; a failing NI operation makes
#     every rank return MPI_ERR_INTERN without hanging; allreduces longer
#     than coll_exanet_max_bytes go to the other components.
#
# Installed as build/host-tests/test_coll_exanet by selftests/build.mk.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$HERE/.." && pwd)}
COMP=$BUILD/ompi/mca_coll_exanet.so
CHECK=$BUILD/selftests/exanet/mpi/exanet_coll_check
FAKE=$HERE/fakeni
OMPI_COMPDIR=$(dirname "$(ls /usr/lib/*/openmpi/lib/openmpi3/mca_coll_basic.so 2>/dev/null | head -n1)" 2>/dev/null)

if ! command -v mpirun >/dev/null || ! command -v ompi_info >/dev/null || [ ! -f "$COMP" ] ||
	[ ! -x "$CHECK" ] || [ ! -f "$FAKE/libexanet.so.1" ] || [ -z "$OMPI_COMPDIR" ]; then
	echo "1..0 # SKIP Open MPI, the component or the check program missing"
	exit 0
fi
if [ -e /dev/exanet0 ]; then
	echo "1..0 # SKIP this host has /dev/exanet0 (the no-device cases assume none)"
	exit 0
fi

export OMPI_MCA_mca_base_component_path=$BUILD/ompi:$OMPI_COMPDIR
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network, no shared-memory single copy (containers refuse ptrace)
MPIRUN=(timeout 240 mpirun --oversubscribe --mca pml ob1 --mca btl self,vader
	--mca btl_vader_single_copy_mechanism none --mca oob_tcp_if_include lo)
TMP=$(mktemp -d)
JOB=ctest$$
trap 'rm -rf "$TMP"; rm -f /dev/shm/exafake-$JOB-*' EXIT

echo "1..11"
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }
show() { sed 's/^/#   /' "$1" | grep -v '^#   ok ' | tail -n "${2:-25}"; }

# run NAME NP [env...] -- [mpirun args...] [-- check args...]:
# exanet_coll_check with stats; output in $TMP/NAME.out, 0 if every check
# passed
run() {
	local name=$1 np=$2 envs=() margs=() out=$TMP/$1.out
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do margs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	env COLL_EXANET_STATS=1 EXA_FAKE_JOB=$JOB "${envs[@]}" \
		"${MPIRUN[@]}" -np "$np" "${margs[@]}" "$CHECK" "$@" > "$out" 2>&1
	local rc=$?
	grep -q '^checks: [0-9]* passed, 0 failed$' "$out" && [ $rc -eq 0 ]
}
# offloaded NAME: the "N offloaded ops" counts, one per line
offloaded() { sed -n 's/.*coll_exanet: \([0-9]*\) offloaded ops.*/\1/p' "$TMP/$1.out"; }
# all_positive NAME NP: NP ranks reported, each > 0
all_positive() {
	local c
	c=$(offloaded "$1")
	[ "$(echo "$c" | grep -c .)" -eq "$2" ] && ! echo "$c" | grep -qx 0
}
# fallbacks NAME: the "N fallback calls" counts, one per line
fallbacks() { sed -n 's/.*coll_exanet: [0-9]* offloaded ops, \([0-9]*\) fallback calls.*/\1/p' "$TMP/$1.out"; }
all_zero() {
	local c
	c=$(offloaded "$1")
	[ "$(echo "$c" | grep -c .)" -eq "$2" ] && [ -z "$(echo "$c" | grep -vx 0)" ]
}

# 1. ompi_info
if ompi_info 2>&1 | grep -q 'MCA coll: exanet' &&
	ompi_info --param coll exanet --level 9 2>&1 | grep -q 'coll_exanet_priority.*"90"'; then
	ok "ompi_info lists coll/exanet, priority 90"
else
	notok "ompi_info lists coll/exanet"; ompi_info 2>&1 | grep -i 'coll' | sed 's/^/#   /'
fi

# 2. no device: declined, MPI works through the other components
if run nodev 2 -- && all_zero nodev 2 && grep -q 'no NI collective unit' "$TMP/nodev.out"; then
	ok "no /dev/exanet0: declined, every check passes through the other components"
else
	notok "no /dev/exanet0"; show "$TMP/nodev.out"
fi

# 3. switched off
if run off 2 -- --mca coll ^exanet && ! grep -q 'coll_exanet:' "$TMP/off.out"; then
	ok "--mca coll ^exanet: not loaded, every check passes"
else
	notok "--mca coll ^exanet"; show "$TMP/off.out"
fi

FAKEENV=(LD_LIBRARY_PATH=$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH})

# 4. fake NI, 2 nodes x 2 ranks, small chunks
if run fake22 4 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=2 -- --mca coll_exanet_chunk_size 4096 &&
	all_positive fake22 4; then
	ok "fake NI, 2 nodes x 2 ranks, 4 KiB chunks: offloaded ($(offloaded fake22 | tr '\n' ' '))"
else
	notok "fake NI, 2 nodes x 2 ranks"; show "$TMP/fake22.out"
fi

# 5. fake NI, 3 nodes x 1 rank, default chunks
if run fake31 3 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=1 -- && all_positive fake31 3; then
	ok "fake NI, 3 nodes x 1 rank: offloaded ($(offloaded fake31 | tr '\n' ' '))"
else
	notok "fake NI, 3 nodes x 1 rank"; show "$TMP/fake31.out"
fi

# 6. fake NI, 2 nodes: 3 ranks + 1 rank (uneven local sets)
if run fake31b 4 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=3 -- --mca coll_exanet_chunk_size 65536 &&
	all_positive fake31b 4; then
	ok "fake NI, nodes of 3 and 1 ranks: offloaded ($(offloaded fake31b | tr '\n' ' '))"
else
	notok "fake NI, nodes of 3 and 1 ranks"; show "$TMP/fake31b.out"
fi

# 7. group creation fails on node 1: everyone falls back
if run nospc 4 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=2 EXA_FAKE_NOSPC_NODE=1 -- &&
	all_zero nospc 4 && grep -q 'communicators fell back' "$TMP/nospc.out" &&
	! grep -q ' 0 communicators fell back' "$TMP/nospc.out"; then
	ok "fake NI, -ENOSPC on one node: every rank falls back, checks pass"
else
	notok "fake NI, -ENOSPC on one node"; show "$TMP/nospc.out"
fi

# 8. a NI without collective unit: declined
if run nocoll 2 "${FAKEENV[@]}" EXA_FAKE_NODEV=coll -- && all_zero nocoll 2 &&
	grep -q 'no NI collective unit' "$TMP/nocoll.out"; then
	ok "fake NI without collective unit: declined, checks pass"
else
	notok "fake NI without collective unit"; show "$TMP/nocoll.out"
fi

# 9. every rank on one node: nothing for the NI to do
if run onenode 3 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=3 -- && all_zero onenode 3; then
	ok "fake NI, one node: left to the other components, checks pass"
else
	notok "fake NI, one node"; show "$TMP/onenode.out"
fi

# 10. an NI operation fails (on every member, as the NI reports a peer's
# failure): one line from each leader, MPI_ERR_INTERN (17 in Open MPI) on
# every rank, nobody hangs (timeout 240 would end mpirun with 124)
run fail 4 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=2 EXA_FAKE_FAIL_AT=3 -- \
	--mca coll_exanet_chunk_size 4096 -- 'allreduce MPI_INT MPI_SUM'
rc=$?
if [ $rc -ne 0 ] && grep -q '^not ok 1 - allreduce MPI_INT MPI_SUM' "$TMP/fail.out" &&
	[ "$(grep -c 'coll_exanet: .*on the NI failed' "$TMP/fail.out")" -ge 2 ] &&
	[ "$(grep -c 'MPI_Allreduce(.*): error 17' "$TMP/fail.out")" -ge 4 ] &&
	[ "$(offloaded fail | grep -c .)" -eq 4 ]; then
	ok "fake NI, an operation fails: MPI_ERR_INTERN on every rank, no hang"
else
	notok "fake NI, an operation fails"; show "$TMP/fail.out" 40
fi

# 11. coll_exanet_max_bytes 4096: of the check's allreduces of 1 .. 16384
# ints, the longer ones (65536 B) go to the other components, the others
# to the NI; with no limit (0) none falls back
if run maxb 4 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=2 -- --mca coll_exanet_max_bytes 4096 \
	-- 'allreduce MPI_INT MPI_SUM' && all_positive maxb 4 &&
	[ "$(fallbacks maxb | grep -c '^[1-9]')" -eq 4 ] &&
	run maxb0 4 "${FAKEENV[@]}" EXA_FAKE_RANKS_PER_NODE=2 -- --mca coll_exanet_max_bytes 0 \
	-- 'allreduce MPI_INT MPI_SUM' && [ "$(fallbacks maxb0 | grep -cx 0)" -eq 4 ]; then
	ok "fake NI, coll_exanet_max_bytes 4096: longer allreduces to the other components" \
		"(fallback calls $(fallbacks maxb | tr '\n' ' ')), none with 0"
else
	notok "fake NI, coll_exanet_max_bytes"; show "$TMP/maxb.out"; show "$TMP/maxb0.out" 10
fi

echo "# coll_exanet: $((n - fail)) of $n passed"
exit $fail
