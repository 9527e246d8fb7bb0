#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The 3D torus of the fabric, end to end (TAP; run by
run-torus-vm-tests.sh; Documentation/fabric.md).

One 8-node 2x2x2 cluster with both NICs and the IP daemon:
  - the shape, coordinates and six ports of every node in sysfs (both
    drivers), exanetctl and QOM, against the dimension-order rule;
  - all-to-all ExaNet messaging and RDMA and EXTOLL VELO and RMA with data
    checks (the selftest programs on 8 nodes); the hop count of every
    packet of every pair (trace events fabric_qemu_rx_hops at the receiver,
    fabric_nic_direct_hops at the sender of a direct write) is the
    dimension-order distance, and ties go the + way (x- carries nothing);
  - contention with link-mbps: one RDMA stream over a link gets >= 0.8 of
    the rate; two over one shared link together no more than one link's
    rate, neither starved; two over disjoint links together more than one
    link could carry (>= 1.3) and each >= 0.8 of the single stream of the
    same run (the host's two cores, not the links, bound both streams at
    once on a loaded host: CI saw 0.77 each beside a single stream of
    0.88);
  - links taken down in the middle of message and RDMA streams (ExaNet) and
    of VELO and RMA (EXTOLL), then brought back: the programs check
    exactly-once, in-order, intact delivery; the detour shows in the
    counters (and as 3-hop arrivals when both x cables of a pair are down);
  - event building (exanet-evb nton over Open MPI) with the cable that
    carries a builder's fragments taken down and brought back: the run
    completes, every fragment checked;
  - a link flapped 100 times under all-to-all load;
  - a node killed mid-traffic: the others keep working (all-to-all of the
    survivors, MPI, IP over the fabric), a send to the dead node fails
    instead of hanging, its neighbours see their cables down, nothing
    leaks on the survivors;
  - bad input: torus shapes, fault actions, node, link names and values are
    refused with a message and change nothing (exacluster, QMP, QEMU)."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD") or os.path.join(TOP, "build")
sys.path.insert(0, os.path.join(TOP, "tools", "cluster"))
sys.path.insert(0, os.path.join(TOP, "tools", "bench"))
sys.path.insert(0, HERE)
from exacluster import Cluster, ClusterError, PORTS  # noqa: E402
from benchlib import LINK_SHARE_CASES, LINK_SHARE_ITERS, PairError, rdma_streams, set_all_links  # noqa: E402
from taplib import check, report  # noqa: E402

NODES = 8
SHAPE = "2x2x2"
ST = "/usr/lib/exanet/selftests"
EXA_SYS = "/sys/class/exanet/exanet0"
EXT_SYS = "/sys/class/extoll/extoll0-rma2"
# For the contention checks: 12.5 MB/s, so that the link and not the host
# bounds a stream.  At 25 MB/s a single stream got 0.66 of the link while
# the host's two cores were busy with a build beside the run (and two
# streams over one shared link together 1.01 in the same minutes).
LINK_MBPS = 100
# the same seconds per stream as bench-rdma's 200 Mb/s with LINK_SHARE_ITERS
LINK_ITERS = LINK_SHARE_ITERS * LINK_MBPS // 200
RDMA_SIZE = 1 << 20
# hops of what arrived over the rings (traced by the receiver) and of
# what the sender wrote directly into the receiver's memory (by the sender)
HOPS_EVENTS = ["fabric_qemu_rx_hops", "fabric_nic_direct_hops"]
HOPS_RE = re.compile(r"fabric_qemu_rx_hops node (\d+): from (\d+) over (\d+) hops")
DIRECT_HOPS_RE = re.compile(r"fabric_nic_direct_hops node (\d+): to (\d+) over (\d+) hops")


def prog_env(c, ranks, port=None):
    """EXA_* of a selftest program started on the given nodes (rank = index)."""
    peers = ",".join(c.node_ip(n) for n in ranks)
    env = {}
    for r, n in enumerate(ranks):
        env[n] = "EXA_RANK=%d EXA_NNODES=%d EXA_PEERS=%s%s" % (
            r, len(ranks), peers, " EXA_OOB_PORT=%d" % port if port else "")
    return env


def run_prog(c, prog, ranks, timeout=600, port=None):
    """A selftest program on `ranks` (node list) at once: {node: RunResult}."""
    env = prog_env(c, ranks, port)
    cmds = {n: "cd /tmp && %s %s/%s 2>&1" % (env[n], ST, prog) for n in ranks}
    return c.run_all(cmds, timeout=timeout)


def failure_lines(output, limit=3000):
    """What a failed kselftest-style run said about its failures: the
    diagnostic lines (assertions, logs) of each failed case, else the tail."""
    picked, case = [], []
    for line in output.splitlines():
        if re.match(r"#\s+RUN\s", line):
            case = [line]
        elif line.startswith("not ok"):
            picked += case + [line]
            case = []
        elif line.startswith("#"):
            case.append(line)
    text = "\n".join(picked) if picked else output
    return text[-limit:]


def prog_ok(res):
    bad = {n: failure_lines(r.output) for n, r in res.items()
           if r.rc != 0 or "# Totals:" not in r.output or re.search(r"^not ok", r.output, re.M)}
    return not bad, bad


def sysfs(c, node, path):
    return c.run(node, "cat %s" % path, timeout=30).output.strip()


def counters(c, node, port, nic="exanet"):
    return c.link_info(node, port, nic=nic)


# ------------------------------------------------------------------ tests
def test_topology(c):
    want_neigh = {}
    for n in range(NODES):
        x, y, z = c.coords(n)
        want_neigh[n] = {"x+": (x ^ 1) + 2 * y + 4 * z, "x-": (x ^ 1) + 2 * y + 4 * z,
                         "y+": x + 2 * (y ^ 1) + 4 * z, "y-": x + 2 * (y ^ 1) + 4 * z,
                         "z+": x + 2 * y + 4 * (z ^ 1), "z-": x + 2 * y + 4 * (z ^ 1)}
    res = c.run_all("cat %s/torus %s/coords %s/torus %s/coords; for p in x+ x- y+ y- z+ z-; "
                    "do echo $p $(cat %s/links/$p/peer %s/links/$p/state %s/links/$p/peer); done"
                    % (EXA_SYS, EXA_SYS, EXT_SYS, EXT_SYS, EXA_SYS, EXA_SYS, EXT_SYS),
                    timeout=60)
    for n in range(NODES):
        lines = res[n].output.split("\n")
        want_c = ",".join(map(str, c.coords(n)))
        ok = lines[:4] == [SHAPE, want_c, SHAPE, want_c]
        for line in lines[4:10]:
            f = line.split()
            ok = ok and len(f) == 4 and int(f[1]) == want_neigh[n][f[0]] and \
                f[2] == "up" and int(f[3]) == int(f[1])
        check("node %d: sysfs of both NICs: torus %s, coords %s, six ports up with "
              "the right neighbours" % (n, SHAPE, want_c), ok, res[n].output)
        qc = c.qmp(n, "qom-get", {"path": "/machine/peripheral/exa0", "property": "torus-coords"})
        if n in (0, 7):
            check("node %d: QOM torus-coords %s" % (n, want_c), qc == want_c, qc)
    r = c.run(0, "exanetctl --json links exanet0", timeout=30)
    try:
        j = json.loads(r.output)
        j = j[0] if isinstance(j, list) else j
        ok = r.rc == 0 and json.dumps(j).count('"up"') >= 6 and "2x2x2" in json.dumps(j)
    except ValueError:
        ok = False
    check("exanetctl --json links: the six ports of node 0", ok, r.output[-800:])
    r = c.run(0, "exanetctl show exanet0", timeout=30)
    check("exanetctl show: torus and coordinates", r.rc == 0 and "2x2x2" in r.output,
          r.output[-800:])


def test_all_to_all(c):
    before = {n: {p: counters(c, n, p) for p in PORTS} for n in range(NODES)}
    res = run_prog(c, "exanet/exanet_alltoall", list(range(NODES)), timeout=600)
    ok, bad = prog_ok(res)
    check("ExaNet messaging all-to-all on 8 nodes: exactly once, in order, intact", ok, bad)
    # every delivered packet of every pair took the dimension-order hop count
    wrong, pairs = [], set()
    for n in range(NODES):
        for ev in HOPS_EVENTS:
            c.qmp(n, "trace-event-set-state", {"name": ev, "enable": False})
    time.sleep(0.5)
    for n in range(NODES):
        try:
            with open(c.trace_log(n)) as f:
                for line in f:
                    m = HOPS_RE.search(line)
                    if m:
                        dst, src, hops = int(m.group(1)), int(m.group(2)), int(m.group(3))
                    else:
                        m = DIRECT_HOPS_RE.search(line)
                        if not m:
                            continue
                        src, dst, hops = int(m.group(1)), int(m.group(2)), int(m.group(3))
                    pairs.add((src, dst))
                    if hops != c.hops(src, dst):
                        wrong.append((src, dst, hops))
        except OSError as e:
            wrong.append(str(e))
    check("hop count of every delivered packet = dimension-order distance (%d pairs seen)"
          % len(pairs), not wrong and len(pairs) == NODES * (NODES - 1), wrong[:10])
    grew = {(n, p): counters(c, n, p)["packets"] - before[n][p]["packets"]
            for n in range(NODES) for p in PORTS}
    check("ties go the + way: x-, y-, z- carried nothing, every + port carried traffic",
          all(grew[(n, p)] == 0 for n in range(NODES) for p in ("x-", "y-", "z-")) and
          all(grew[(n, p)] > 0 for n in range(NODES) for p in ("x+", "y+", "z+")), grew)
    res = run_prog(c, "exanet/exanet_rdma_alltoall", list(range(NODES)), timeout=900)
    ok, bad = prog_ok(res)
    check("ExaNet RDMA all-to-all on 8 nodes, data checked", ok, bad)
    res = run_prog(c, "extoll/extoll_alltoall", list(range(NODES)), timeout=900)
    ok, bad = prog_ok(res)
    check("EXTOLL VELO and RMA all-to-all on 8 nodes, data checked", ok, bad)


def test_contention(c):
    set_all_links(c, "mbps=%d" % LINK_MBPS, nic="exanet")
    link = LINK_MBPS / 8.0      # MB/s
    # single and disjoint: each stream has a cable to itself.  shared: the
    # two streams together move no more than one cable's rate from the
    # first start to the last end (they may not overlap exactly: the one
    # that ends first leaves the cable to the other), and neither starves.
    # disjoint: two cables in use (more than one could carry), each stream
    # close to what one stream alone got in this run
    single = []
    good = {"single": lambda share, total: all(x >= 0.8 for x in share),
            "shared": lambda share, total: total <= 1.05 and all(x >= 0.2 for x in share),
            "disjoint": lambda share, total: (total is not None and total >= 1.3 and single and
                                              all(x >= 0.8 * single[0] for x in share))}
    port = 6100
    for name, pairs in LINK_SHARE_CASES:
        try:
            rates, res = rdma_streams(c, pairs, port, RDMA_SIZE, LINK_ITERS)
            share = [round(r / link, 3) for r in rates]
            secs = [float(json.loads(line)["results"][0]["seconds"]) for r in res.values()
                    for line in r.output.splitlines() if line.startswith("{")]
            total = round(RDMA_SIZE * LINK_ITERS * len(secs) / 1e6 / max(secs) / link, 3)
            diag = {n: r.output[-400:] for n, r in res.items()}
        except (PairError, ValueError, KeyError) as e:
            share, total, diag = [], None, str(e)
        port += 10
        if name == "single" and share:
            single.append(share[0])
        check("contention, %s %s: shares of link-mbps %s, together %s" % (name, pairs, share, total),
              len(share) == len(pairs) and good[name](share, total), diag)
    y = counters(c, 1, "y+")
    check("a rate-limited link counts its busy time", y["busy_ns"] > 0 and y["mbps"] == LINK_MBPS, y)
    set_all_links(c, "mbps=0", nic="exanet")


def flap(c, node, steps, stop):
    """steps: [(seconds, link, action)] repeated until stop is set."""
    while not stop.is_set():
        for secs, link, action in steps:
            if stop.wait(secs):
                break
            c.fault(node, link, action)
    for link in ("x+", "x-"):
        c.fault(node, link, "up")


def test_link_down_mid_stream(c):
    before = {n: {p: counters(c, n, p) for p in ("x+", "x-")} for n in (0, 2)}
    hops3 = c.rx_hops(1)[3]
    stop = threading.Event()
    # x+ down, then x- too (0 <-> 1 go around through y: 3 hops), both up
    steps = [(0.7, "x+", "down"), (0.7, "x-", "down"), (0.7, "x+", "up"),
             (0.1, "x-", "up")]
    flappers = [threading.Thread(target=flap, args=(c, n, steps, stop)) for n in (0, 2, 4)]
    results = {}

    def prog(name, ranks, port):
        results[name] = run_prog(c, name, ranks, timeout=900, port=port)
    progs = [threading.Thread(target=prog, args=a) for a in
             (("exanet/exanet_msg_remote", [0, 1], 47210), ("exanet/exanet_rdma_remote", [2, 3], 47220),
              ("extoll/extoll_remote", [4, 5], 47230))]
    for t in flappers + progs:
        t.start()
    for t in progs:
        t.join()
    stop.set()
    for t in flappers:
        t.join()
    for name in ("exanet/exanet_msg_remote", "exanet/exanet_rdma_remote", "extoll/extoll_remote"):
        ok, bad = prog_ok(results[name])
        check("%s while its pair's x cables go down and up: every check passed "
              "(exactly once, in order, intact)" % name, ok, bad)
    after = {n: {p: counters(c, n, p) for p in ("x+", "x-")} for n in (0, 2)}
    d = {(n, p): {k: after[n][p][k] - before[n][p][k] for k in ("detoured", "down_events")}
         for n in (0, 2) for p in ("x+", "x-")}
    check("the detours show in the counters: packets that avoided x+ (the route's "
          "cable), down events of both cables",
          all(v["down_events"] > 0 for v in d.values()) and
          all(d[(n, "x+")]["detoured"] > 0 for n in (0, 2)), d)
    # The streams above may end before a flap cycle has both cables down
    # (CI saw 0 three-hop arrivals once), so the detour is also shown on
    # its own: both x cables of node 0 down, one pingpong 0 <-> 1.
    for link in ("x+", "x-"):
        c.fault(0, link, "down")
    try:
        res = c.run_all({1: "exanet-pingpong --server --oob 47240",
                         0: "exanet-pingpong --client --oob %s:47240 --sizes 8 --iters 20 "
                            "--warmup 0" % c.node_ip(1)}, timeout=120)
    finally:
        for link in ("x+", "x-"):
            c.fault(0, link, "up")
    got3 = c.rx_hops(1)[3] - hops3
    check("with both x cables of 0 <-> 1 down, packets went around through y (3 hops): %d"
          % got3, got3 > 0 and res[0].rc == 0 and res[1].rc == 0,
          (got3, res[0].output[-400:], res[1].output[-400:]))
    ext = counters(c, 4, "x+", nic="extoll")
    check("EXTOLL: the detour of its own fabric shows in its counters",
          ext["detoured"] > 0 and ext["down_events"] > 0, ext)


def test_evb_link_down(c):
    """Event building (exanet-evb nton, Documentation/evb.md) on the 8
    nodes: the RUs are z=0, the BUs z=1, and every fragment for node 4
    crosses node 0's z+ cable.  It goes down while fragments flow and comes
    back: the run completes, every byte of every fragment checked."""
    before = counters(c, 0, "z+")
    res = {}
    argv = ["exanet-evb", "nton", "--sizes", "4096,32768", "--seconds", "4",
            "--warmup", "0.5", "--check", "full"]

    def run():
        res["r"] = c.run(0, c.mpirun_command(argv), timeout=300)
    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 120
    while time.time() < deadline and t.is_alive() and \
            counters(c, 0, "z+")["bytes"] - before["bytes"] < (4 << 20):
        time.sleep(0.2)
    # Down for at least 2 s and until something went around it: on a slow
    # host the 2 s can fall between two runs of the benchmark (CI saw
    # "detoured 0" once), and then the test would show nothing.
    c.fault(0, "z+", "down")
    down_at = time.time()
    while t.is_alive() and (time.time() - down_at < 2 or (
            counters(c, 0, "z+")["detoured"] == before["detoured"] and
            time.time() - down_at < 60)):
        time.sleep(0.2)
    c.fault(0, "z+", "up")
    t.join()
    r = res["r"]
    out = next((json.loads(x) for x in r.output.splitlines() if x.startswith("{")), None)
    bad = [x for x in (out or {}).get("results", [])
           if x["errors"] or x["lost"] or x["duplicated"] or not x["events"]]
    check("exanet-evb nton on 8 nodes while node 0's z+ cable goes down and up: exit 0, "
          "no fragment lost, duplicated or damaged",
          r.rc == 0 and out is not None and not out["errors"] and not bad and
          len(out["results"]) == 2, (r.rc, bad, r.output[-1500:]))
    after = counters(c, 0, "z+")
    check("the fragments went around the cable while it was down (detoured %d)"
          % (after["detoured"] - before["detoured"]),
          after["detoured"] > before["detoured"] and
          after["down_events"] > before["down_events"], (before, after))


def test_flapping(c):
    before = counters(c, 0, "y+")
    stop = threading.Event()
    done = {}

    def load():
        rounds = 0
        while not stop.is_set():
            res = run_prog(c, "exanet/exanet_alltoall", list(range(NODES)), timeout=600)
            ok, bad = prog_ok(res)
            done.setdefault("bad", []).append(bad) if not ok else None
            rounds += 1
        done["rounds"] = rounds
    t = threading.Thread(target=load)
    t.start()
    time.sleep(2)
    for _ in range(100):
        c.fault(0, "y+", "down")
        time.sleep(0.01)
        c.fault(0, "y+", "up")
        time.sleep(0.01)
    stop.set()
    t.join()
    after = counters(c, 0, "y+")
    check("100 down/up flaps of node 0's y+ under all-to-all load: every round passed "
          "(%d rounds)" % done.get("rounds", 0),
          not done.get("bad") and done.get("rounds", 0) >= 1, done.get("bad"))
    check("100 down events counted, the cable up again",
          after["down_events"] - before["down_events"] == 100 and after["state"] == "up",
          after)


def test_node_killed(c):
    victim = 7
    # traffic on the survivors while the node dies
    pid = c.pids["n%d" % victim]
    survivors = list(range(victim))
    out = {}
    in_use = "%s/pkt_in_use %s/mbox_in_use %s/rdma_ranks_in_use" % (EXA_SYS, EXA_SYS, EXA_SYS)
    baseline = {n: sysfs(c, n, in_use).split() for n in survivors}   # the IP daemon's
    detoured = counters(c, 6, "x+")["detoured"]

    def a2a():
        out["a2a"] = run_prog(c, "exanet/exanet_alltoall", survivors, timeout=600)
    t = threading.Thread(target=a2a)
    t.start()
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    t.join()
    ok, bad = prog_ok(out["a2a"])
    check("all-to-all of the 7 survivors while node 7 is killed: passed", ok, bad)
    d = counters(c, 6, "x+")["detoured"] - detoured
    check("routes through the dead node took a detour (node 6 x+, towards node 7: %d)" % d,
          d > 0, d)
    for n, p in ((3, "z+"), (5, "y+"), (6, "x+")):
        st = sysfs(c, n, "%s/links/%s/state" % (EXA_SYS, p)) + " " + \
            sysfs(c, n, "%s/links/%s/peer_alive" % (EXA_SYS, p))
        check("node %d: the cable %s to the dead node is down (%s)" % (n, p, st),
              st == "down 0", st)
    # a message to the dead node fails after the retransmission budget
    t0 = time.monotonic()
    r = c.run(0, "%s/exanet/exa_poll_wait send %d 0" % (ST, victim), timeout=120)
    secs = time.monotonic() - t0
    check("a send to the dead node reports a failure in %.1f s, no hang" % secs,
          r.rc != 0 and not r.timed_out and secs < 60, r.output[-400:])
    leaks = {}
    for n in survivors:
        v = sysfs(c, n, in_use).split()
        if v != baseline[n]:
            leaks[n] = (baseline[n], v)
    check("no packetizer, mailbox or RDMA rank left allocated on the survivors (in use: "
          "the IP daemon's, as before)", not leaks, leaks)
    r = c.run(0, "ping -c 3 -W 5 10.43.0.4 && ping -c 3 -W 5 10.43.0.6", timeout=60)
    check("IP over the fabric between survivors (exa0, 10.43.0.x)", r.rc == 0, r.output[-600:])
    r = c.run(0, c.mpirun_command(["/usr/bin/exanet-mpi-bench", "barrier", "--iters", "200"],
                                  1, 4), timeout=400)
    check("MPI between the survivors (barrier on nodes 0-3)", r.rc == 0, r.output[-800:])


def test_bad_input(c):
    exac = [sys.executable, os.path.join(TOP, "tools", "cluster", "exacluster.py")]
    before = counters(c, 2, "x+")
    for args, what in (([ "--node", "99", "--link", "x+", "down"], "no node"),
                       (["--node", "2", "--link", "w+", "down"], "unknown link"),
                       (["--node", "2", "--link", "x+", "sideways"], "unknown fault action"),
                       (["--node", "2", "--link", "x+", "drop=2000000"], "0..1000000"),
                       (["--node", "2", "--link", "x+", "down", "corrupt=x"], "integer")):
        p = subprocess.run(exac + ["fault", "--name", c.name] + args, capture_output=True,
                           text=True, timeout=60)
        check("exacluster fault %s: refused (%s)" % (" ".join(args), what),
              p.returncode == 2 and what in p.stderr, (p.returncode, p.stderr))
    check("... and the link did not change", counters(c, 2, "x+")["admin"] == before["admin"]
          == "up", counters(c, 2, "x+"))
    for prop, value, what in (("link-x+", "sideways", "up or down"),
                              ("link-x+-drop-ppm", 2000000, "0..1000000"),
                              ("link-y-", 5, "expected: string"),
                              ("link-x+-ns", 99999999, "0..10000000"),
                              ("link-x+-counters", "x", "")):
        try:
            c.qmp(2, "qom-set", {"path": "/machine/peripheral/exa0", "property": prop,
                                 "value": value})
            err = None
        except ClusterError as e:
            err = str(e)
        check("qom-set %s=%r refused with a message" % (prop, value),
              err is not None and what in err, err)
    after = counters(c, 2, "x+")
    check("... nothing changed", {k: after[k] for k in ("admin", "drop_ppm", "ns")} ==
          {k: before[k] for k in ("admin", "drop_ppm", "ns")}, (before, after))
    p = subprocess.run(exac + ["up", "-n", "8", "--name", "torus-bad", "--torus", "3x3x3"],
                       capture_output=True, text=True, timeout=60)
    check("exacluster up -n 8 --torus 3x3x3: refused, nothing started",
          p.returncode == 2 and "27 nodes" in p.stderr and
          not os.path.exists(os.path.join(BUILD, "cluster", "torus-bad", "state.json")),
          (p.returncode, p.stderr))
    for dev, what in (("exanet,node-id=0,num-nodes=8,fabric=/tmp/torus-bad,torus=3x3x3",
                       "27 nodes"),
                      ("exanet,node-id=0,num-nodes=8,fabric=/tmp/torus-bad,torus=2x2", "XxYxZ"),
                      ("extoll,node-id=0,num-nodes=8,fabric=/tmp/torus-bad,link-ns=20000000",
                       "link-ns")):
        p = subprocess.run([c.qemu, "-machine", "q35", "-accel", "tcg", "-nodefaults",
                            "-display", "none", "-S", "-device", dev],
                           capture_output=True, text=True, timeout=60)
        check("QEMU -device %s: refused (%s)" % (dev.split(",")[0] + ",...," +
                                                 dev.split(",")[-1], what),
              p.returncode != 0 and what in p.stderr, p.stderr[-400:])


def main():
    t0 = time.time()
    try:
        with Cluster(nodes=NODES, name="torus-test", torus=SHAPE, extoll=True,
                     append="exacluster.ip", trace=HOPS_EVENTS) as c:
            print("# 8 nodes up in %.0f s" % (time.time() - t0), flush=True)
            for name, fn in (("topology", test_topology), ("all-to-all", test_all_to_all),
                             ("contention", test_contention),
                             ("link down", test_link_down_mid_stream),
                             ("event building, link down", test_evb_link_down),
                             ("flapping", test_flapping), ("bad input", test_bad_input),
                             ("node killed", test_node_killed)):
                t1 = time.time()
                try:
                    fn(c)
                except (ClusterError, OSError, ValueError, KeyError) as e:
                    check("%s: ran to the end" % name, False, repr(e))
                print("# %s: %.0f s" % (name, time.time() - t1), flush=True)
    except ClusterError as e:
        check("8-node 2x2x2 cluster boots", False, str(e))
    print("# total %.0f s" % (time.time() - t0))
    return report()


if __name__ == "__main__":
    sys.exit(main())
