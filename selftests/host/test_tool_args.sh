#!/bin/bash
# Host test (TAP): every C tool answers a bad option value with one line on
# stderr naming the option, the value and what the option takes
# ("TOOL: --OPT: 'VALUE' is not ..."), and an unknown option or a missing
# value with one line and the hint to --help; exit status 2, nothing on
# stdout.  The argument errors come before any device is opened, so this
# runs on a host without the NI.  Installed as build/host-tests/test_tool_args
# by tools/build.mk; the messages come from tools/common/tool_parse.h.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$HERE/.." && pwd)}
BIN=$BUILD/bin

# tool|arguments|what the one line must contain (a grep -F pattern)
CASES=(
	"exanet-pingpong|--client --iters abc|exanet-pingpong: --iters: 'abc' is not a number in 1..100000000"
	"exanet-pingpong|--server --warmup -1|exanet-pingpong: --warmup: '-1' is not a number in 0..100000000"
	"exanet-pingpong|--server --slots 100|exanet-pingpong: --slots: '100' is not a power of two in"
	"exanet-pingpong|--server --timeout soon|exanet-pingpong: --timeout: 'soon' is not a number of seconds in"
	"exanet-pingpong|--client --oob h:0|exanet-pingpong: --oob: 'h:0' is not HOST:PORT"
	"exanet-pingpong|--client --oob h:1 --sizes 1,x|exanet-pingpong: --sizes: '1,x' is not a list of"
	"exanet-pingpong|--bogus|exanet-pingpong: unknown option '--bogus'; try 'exanet-pingpong --help'"
	"exanet-pingpong|-Z|exanet-pingpong: unknown option '-Z'; try"
	"exanet-pingpong|--server --iters|exanet-pingpong: option '--iters' needs a value; try"
	"exanet-pingpong|--server --json=1|exanet-pingpong: option '--json=1' takes no value; try"
	"udp-pingpong|--client --iters 0|udp-pingpong: --iters: '0' is not a number in 1..100000000"
	"udp-pingpong|--server --clock hpet|udp-pingpong: --clock: 'hpet' is not one of auto, monotonic, tsc"
	"exanet-rdma-bw|--client --iters abc|exanet-rdma-bw: --iters: 'abc' is not a number in 1..100000000"
	"exanet-rdma-bw|--server --window 33|exanet-rdma-bw: --window: '33' is not a number in 1..32"
	"exanet-rdma-bw|--reg-time 4095|exanet-rdma-bw: --reg-time: '4095' is not a number in 4096..17179869184"
	"exanet-rdma-bw|--server --peer-node x|unknown option '--peer-node'"
	"exanet-rdma-lat|--client --iters 10000001|exanet-rdma-lat: --iters: '10000001' is not a number in 1..10000000"
	"exanet-rdma-lat|--server --timeout 0|exanet-rdma-lat: --timeout: '0' is not a number of seconds in"
	"exanet-rdma-lat|--nope|exanet-rdma-lat: unknown option '--nope'; try 'exanet-rdma-lat --help'"
	"rma2-pingpong|--client --iters 1e3|rma2-pingpong: --iters: '1e3' is not a number in"
	"rma2-bw|--client --oob h:1 --sizes 0|rma2-bw: --sizes: '0' is not a list of"
	"velo2-pingpong|--client --oob h:1 -S 121|velo2-pingpong: --sizes: '121' is not a list of at most 64 sizes in 1..120"
	"velo2-pingpong|--server --warmup x|velo2-pingpong: --warmup: 'x' is not a number in"
	"exanetctl|--bogus list|exanetctl: unknown option '--bogus'; try 'exanetctl --help'"
	"exanetctl|frobnicate|exanetctl: unknown command 'frobnicate'; try 'exanetctl --help'"
	"exanetctl|pdid bind --pid x --pdid 1|exanetctl: --pid: 'x' is not a number in 1..2147483647"
	"exanetctl|pdid bind --pid 1 --pdid 0|exanetctl: --pdid: '0' is not a number in 1..32767"
	"exanetctl|run --pdid 40000 -- true|exanetctl: --pdid: '40000' is not a number in 1..32767"
	"exanetctl|run --pdid|exanetctl: option '--pdid' needs a value; try"
	"exanet-mpi-bench|latency --iters abc|exanet-mpi-bench: --iters: 'abc' is not a number in 1..100000000"
	"exanet-mpi-bench|bw --window 0|exanet-mpi-bench: --window: '0' is not a number in 1..1024"
	"exanet-mpi-bench|latency --sizes 8,x|exanet-mpi-bench: --sizes: '8,x' is not a list of"
	"exanet-mpi-bench|pingpong|exanet-mpi-bench: mode: 'pingpong' is not one of latency, bw,"
	"exanet-mpi-bench|latency --bogus 1|exanet-mpi-bench: unknown option '--bogus'; try"
	"exanet-evb|nton --depth 0|exanet-evb: --depth: '0' is not a number in 1..64"
	"exanet-evb|nton --seconds 0|exanet-evb: --seconds: '0' is not a number of seconds in 0.1..3600"
	"exanet-evb|nton --check some|exanet-evb: --check: 'some' is not one of full, header"
	"exanet-evb|nton --sizes 8|exanet-evb: --sizes: '8' is not a list of"
	"exanet-evb|ring|exanet-evb: pattern: 'ring' is not one of nton, nxn"
	"exanet-evb|nton --bogus 1|exanet-evb: unknown option '--bogus'; try 'exanet-evb --help'"
	"exanet-ipd|--mtu 100|exanet-ipd: --mtu: '100' is not a number in 576..65520"
	"exanet-ipd|--pdid 0|exanet-ipd: --pdid: '0' is not a number in 1..32767"
	"exanet-ipd|--hb-port x|exanet-ipd: --hb-port: 'x' is not a number in 1..65535"
	"exanet-ipd|--mode fast|exanet-ipd: --mode: 'fast' is not one of busy, sleep, irq"
	"exanet-ipd|--nice 20|exanet-ipd: --nice: '20' is not a number in -20..19"
	"exanet-ipd|--addr 10.0.0.1/40|exanet-ipd: --addr: '10.0.0.1/40' is not A.B.C.D"
	"exanet-ipd|--bogus|exanet-ipd: unknown option '--bogus'; try 'exanet-ipd --help'"
)

echo "1..${#CASES[@]}"
n=0 fail=0
for c in "${CASES[@]}"; do
	IFS='|' read -r tool args want <<<"$c"
	n=$((n + 1))
	if [ ! -x "$BIN/$tool" ]; then
		echo "not ok $n - $tool $args # $BIN/$tool missing (make all)"
		fail=1
		continue
	fi
	# shellcheck disable=SC2086 # the arguments are split on purpose
	out=$("$BIN/$tool" $args 2>/dev/null </dev/null)
	rc=$?
	err=$("$BIN/$tool" $args 2>&1 >/dev/null </dev/null)
	lines=$(printf '%s\n' "$err" | wc -l)
	if [ $rc -eq 2 ] && [ -z "$out" ] && [ "$lines" -eq 1 ] && grep -qF -- "$want" <<<"$err"; then
		echo "ok $n - $tool $args"
	else
		echo "not ok $n - $tool $args"
		echo "#   exit $rc (want 2), $lines stderr line(s) (want 1), stdout ${#out} bytes (want 0)"
		echo "#   want: $want"
		printf '%s\n' "$err" | sed 's/^/#   got:  /'
		fail=1
	fi
done
exit $fail
