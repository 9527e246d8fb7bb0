#!/bin/sh
# SPDX-License-Identifier: MIT
# EXTOLL tools on one node (tests.list: 1 node): rma2-pingpong (bt, qw,
# completer notifications), rma2-bw (put, get) and velo2-pingpong (single
# messages, fragmented messages, streaming), server and client as two
# processes over loopback; each must exit 0 and print valid --json.  The
# fragmenting runs use --verify (every message checked on both sides) and
# sizes that are not multiples of the 120-byte fragment or of 8; at 5000
# bytes the stream typically runs out of send credits, so refused sends
# are retried (measured: 1e5-2e5 retries).  TAP output.
[ -e /dev/extoll/rma2 ] || { echo "1..0 # SKIP no EXTOLL device"; exit 0; }
cd /tmp || exit 1
n=0
fail=0
echo "TAP version 13"
echo "1..9"
run() {	# name port server-and-client-args...
	name=$1; port=$2; shift 2
	n=$((n + 1))
	"$@" --server --oob ":$port" -t 60 > /tmp/xt_srv_$n.txt 2>&1 &
	spid=$!
	sleep 1
	if "$@" --client --oob "127.0.0.1:$port" -t 60 --json > /tmp/xt_cli_$n.txt 2>&1 &&
	   wait $spid && grep -q '"results":\[{' /tmp/xt_cli_$n.txt; then
		echo "ok $n $name"
	else
		sed 's/^/# /' /tmp/xt_cli_$n.txt /tmp/xt_srv_$n.txt
		kill $spid 2>/dev/null
		echo "not ok $n $name"
		fail=1
	fi
}
run rma2_pingpong_bt 47411 rma2-pingpong -i 100 -w 10 -S 1,64,1000,4096
run rma2_pingpong_qw 47412 rma2-pingpong --qw -i 100 -w 10 -S 8,64,4096
run rma2_bw_put 47413 rma2-bw -i 20 -w 2 -S 4096,1048576
run rma2_bw_get 47414 rma2-bw --get -i 20 -w 2 -S 4096,1048576
run velo2_pingpong 47415 velo2-pingpong -i 200 -w 20
run rma2_pingpong_noti 47416 rma2-pingpong --noti -i 100 -w 10 -S 1,64,1000,4096
run velo2_pingpong_frag_verify 47417 velo2-pingpong --frag --verify -i 30 -w 3 \
	-S 1,8,119,120,121,240,1000,4096,5000
run velo2_stream_verify 47418 velo2-pingpong --bw --verify -i 200 -w 10 -S 1,121,5000

# without --frag a message is one VELO message: 121 bytes is a usage error
n=$((n + 1))
velo2-pingpong --client --oob 127.0.0.1:47419 -S 121 > /tmp/xt_usage.txt 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "bad --sizes" /tmp/xt_usage.txt; then
	echo "ok $n velo2_pingpong_single_message_limit"
else
	sed 's/^/# /' /tmp/xt_usage.txt
	echo "# exit status $rc, expected 2"
	echo "not ok $n velo2_pingpong_single_message_limit"
	fail=1
fi
exit $fail
