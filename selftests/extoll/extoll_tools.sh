#!/bin/sh
# SPDX-License-Identifier: MIT
# EXTOLL tools on one node (tests.list: 1 node): rma2-pingpong (bt, qw,
# completer notifications), rma2-bw (put, get) and velo2-pingpong (single
# messages, fragmented messages, streaming), server and client as two
# processes over loopback; each must exit 0 and print valid --json.  The
# fragmenting runs use --verify (every message checked on both sides) and
# sizes that are not multiples of the 120-byte fragment or of 8; at 5000
# bytes the stream typically runs out of send credits, so refused sends
# are retried (measured: 1e5-2e5 retries).  Then the same tools as an
# ordinary user (uid 65534, unbound: one user domain on both sides) with
# the node's default RLIMIT_MEMLOCK: rma2-pingpong, velo2-pingpong and
# rma2-bw with its default sizes (it registers only the largest size + a
# page, 4 MiB + 4 KiB: it must run when the limit allows that, which the
# default 8 MiB does); with RLIMIT_MEMLOCK lowered to 1 MiB the same run
# must end with exit status 1 on both sides naming RLIMIT_MEMLOCK.  TAP
# output.
[ -e /dev/extoll/rma2 ] || { echo "1..0 # SKIP no EXTOLL device"; exit 0; }
cd /tmp || exit 1
n=0
fail=0
echo "TAP version 13"
echo "1..13"
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

# as nobody: /tmp/xt_nb.sh CMD... runs CMD as uid 65534 (busybox su keeps
# the environment and the limits; NB_MEMLOCK=KiB lowers RLIMIT_MEMLOCK)
cat > /tmp/xt_nb.sh <<'EOF'
#!/bin/sh
[ -n "$NB_MEMLOCK" ] && { ulimit -l "$NB_MEMLOCK" || exit 125; }
exec su -m -s /bin/sh nobody -c "$*"
EOF
chmod 0755 /tmp/xt_nb.sh
memlock=$(ulimit -l)
echo "# RLIMIT_MEMLOCK of the node: $memlock KiB"
run nobody_rma2_pingpong 47420 /tmp/xt_nb.sh rma2-pingpong -i 100 -w 10 -S 1,64,4096
run nobody_velo2_pingpong 47421 /tmp/xt_nb.sh velo2-pingpong -i 200 -w 20
if [ "$memlock" = unlimited ] || [ "$memlock" -ge 4100 ]; then
	run nobody_rma2_bw_default_sizes 47422 /tmp/xt_nb.sh rma2-bw -i 4 -w 1
else
	n=$((n + 1))
	echo "ok $n nobody_rma2_bw_default_sizes # SKIP RLIMIT_MEMLOCK $memlock KiB < 4100 KiB"
fi
# 1 MiB of memlock: both sides refuse, saying why
n=$((n + 1))
NB_MEMLOCK=1024 /tmp/xt_nb.sh rma2-bw --server --oob :47423 -t 30 > /tmp/xt_srv_lim.txt 2>&1 &
spid=$!
sleep 1
NB_MEMLOCK=1024 /tmp/xt_nb.sh rma2-bw --client --oob 127.0.0.1:47423 -t 30 -i 4 -w 1 \
	> /tmp/xt_cli_lim.txt 2>&1
rc=$?
wait $spid
src=$?
if [ $rc -eq 1 ] && [ $src -eq 1 ] &&
   grep -q 'registers 4100 KiB but RLIMIT_MEMLOCK is 1024 KiB' /tmp/xt_cli_lim.txt &&
   grep -q 'RLIMIT_MEMLOCK is 1024 KiB' /tmp/xt_srv_lim.txt; then
	echo "ok $n nobody_rma2_bw_memlock_too_small_says_so"
else
	sed 's/^/# /' /tmp/xt_cli_lim.txt /tmp/xt_srv_lim.txt
	echo "# exit status client $rc server $src, expected 1 and 1"
	echo "not ok $n nobody_rma2_bw_memlock_too_small_says_so"
	fail=1
fi

# without --frag a message is one VELO message: 121 bytes is a usage error
n=$((n + 1))
velo2-pingpong --client --oob 127.0.0.1:47419 -S 121 > /tmp/xt_usage.txt 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--sizes: '121' is not a list of at most 64 sizes in 1..120" /tmp/xt_usage.txt; then
	echo "ok $n velo2_pingpong_single_message_limit"
else
	sed 's/^/# /' /tmp/xt_usage.txt
	echo "# exit status $rc, expected 2"
	echo "not ok $n velo2_pingpong_single_message_limit"
	fail=1
fi
exit $fail
