# SPDX-License-Identifier: GPL-2.0
"""Shared pieces of the demo and the benchmarks: boot a cluster, run a
server/client pair of ping-pong tools on two nodes, parse their output."""

import datetime
import json
import os
import platform
import statistics
import time
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD") or os.path.join(TOP, "build")
sys.path.insert(0, os.path.join(TOP, "tools", "cluster"))

from exacluster import Cluster, ClusterError, default_qemu  # noqa: E402,F401

OOB_PORT = 5100

# Open MPI's options for each transport of the MPI benchmarks
MPI_TRANSPORTS = {
    # the node image's openmpi-mca-params.conf makes this the default; named
    # here so that the run does not depend on it
    "exa": "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include exanet",
    "tcp": "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 10.42.0.0/24",
    # the provider "extoll" (nodes with the EXTOLL NIC)
    "extoll": "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include extoll",
}


def _git_describe():
    """`git describe --always --dirty` of the tree, or None outside git."""
    try:
        r = subprocess.run(["git", "-C", TOP, "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _build_id(path):
    """The GNU build id of an ELF file (readelf -n), or None."""
    try:
        r = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Build ID:\s*([0-9a-f]+)", r.stdout)
    return m.group(1) if m else None


def emulator_info(qemu=None):
    """The emulator the clusters ran: the binary exacluster picks (--qemu,
    EXACLUSTER_QEMU, build/qemu-system-x86_64, PATH), the file it resolves
    to, scripts/build-qemu.sh's cache key (the -<key> suffix of the
    published binary, a hash of the device sources) and the ELF build id."""
    try:
        path = qemu or default_qemu()
    except ClusterError as e:
        return {"path": None, "error": str(e)}
    real = os.path.realpath(path)
    m = re.match(r"qemu-system-x86_64-([0-9a-f]+)$", os.path.basename(real))
    return {"path": path, "binary": real, "cache_key": m.group(1) if m else None,
            "build_id": _build_id(real)}


def provenance(qemu=None):
    """What a benchmark's figures were measured with: the tree (commit), the
    time (date, UTC ISO 8601), the machine (host) and the emulator."""
    return {
        "commit": _git_describe(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {"hostname": platform.node(), "cpu_model": _cpu_model(),
                 "cores": os.cpu_count()},
        "emulator": emulator_info(qemu),
    }


def write_bench_json(path, result, indent=2, qemu=None):
    """Writes a benchmark's result to path (its directory made) with the
    provenance() keys first; every bench script writes its JSON here."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    out = provenance(qemu)
    out.update(result)
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=indent)
        f.write("\n")
    os.replace(path + ".tmp", path)


class PairError(Exception):
    pass


def host_tool(name, args):
    """Build tools/bench/<name>.c for the host (with the tools' JSON writer,
    on json-c) if it is missing or older than its sources, run it with
    args and return its JSON object."""
    common = os.path.join(TOP, "tools", "common")
    srcs = [os.path.join(TOP, "tools", "bench", name + ".c"),
            os.path.join(common, "tool_json.c")]
    exe = os.path.join(BUILD, "bench", name)
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    if not os.path.exists(exe) or any(os.path.getmtime(exe) < os.path.getmtime(f)
                                      for f in srcs + [os.path.join(common, "tool_json.h")]):
        json_c = subprocess.run(["pkg-config", "--cflags", "--libs", "json-c"],
                                capture_output=True, text=True).stdout.split()
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-pthread", "-I" + common,
                        "-o", exe] + srcs + (json_c or ["-I/usr/include/json-c", "-ljson-c"]),
                       check=True)
    out = subprocess.run([exe] + [str(a) for a in args], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def run_pair(cluster, server_cmd, client_cmd, timeout=300, server=1, client=0):
    """Run server_cmd on node `server` and client_cmd on node `client` at the
    same time.  Returns (client output, server output); raises PairError if
    either side failed."""
    res = cluster.run_all({server: server_cmd, client: client_cmd}, timeout=timeout)
    failed = ["node %d: %r exited %d:\n%s" % (node, server_cmd if node == server else client_cmd,
                                              res[node].rc, res[node].output)
              for node in (client, server) if res[node].rc != 0]
    if failed:
        raise PairError("\n".join(failed))
    return res[client].output, res[server].output


def run_loopback(cluster, tool, sizes, iters, warmup, port, extra="", timeout=900):
    """Server and client of a ping-pong tool as two processes of node 0
    (one vCPU: each wait must let the other process run).  Returns the
    client's JSON result."""
    server, client = pingpong_cmds(tool, sizes, iters, warmup, port, extra)
    client = client.replace(Cluster.node_ip(1), "127.0.0.1")
    r = cluster.run(0, "%s & sleep 1; %s; rc=$?; wait $! || rc=1; exit $rc"
                    % (server, client), timeout=timeout)
    if r.rc != 0:
        raise PairError("loopback %s exited %d:\n%s" % (tool, r.rc, r.output))
    return parse_json_line(r.output)


def wait_bound(cluster, node, port, udp=False):
    """Wait up to 30 s until a socket on node listens on TCP port (udp:
    is bound to UDP port).  True if it did."""
    table, state = ("udp", "07") if udp else ("tcp", "0A")
    bound = "grep -qs ':%04X 0*:0000 %s' /proc/net/%s /proc/net/%s6" % (port, state, table, table)
    r = cluster.run(node, "i=0; until %s; do i=$((i+1)); [ $i -gt 300 ] && exit 1; sleep 0.1; done"
                    % bound, timeout=60)
    return r.rc == 0


def run_pair_sequenced(cluster, server_cmd, client_cmd, port, timeout=300):
    """Like run_pair, but start the client only once the server listens on
    `port`, so both sides make the same set-up calls in every run (no
    connect retries).  Returns (client output, server output)."""
    pid, log = cluster.spawn(1, server_cmd + "; echo \"exit=$?\"")
    if not wait_bound(cluster, 1, port):
        raise PairError("node 1: server never listened on %d:\n%s" % (
            port, cluster.run(1, "cat " + log, timeout=30).output))
    client = cluster.run(0, client_cmd, timeout=timeout)
    r = cluster.run(1, "while kill -0 %d 2>/dev/null; do sleep 0.1; done; cat %s" % (pid, log),
                    timeout=60)
    if client.rc != 0 or "exit=0" not in r.output:
        raise PairError("pair failed:\nclient (rc %d):\n%s\nserver:\n%s" % (
            client.rc, client.output, r.output))
    return client.output, r.output


def pingpong_cmds(tool, sizes, iters, warmup, port, extra="", json_out=True, server_node=1):
    """Server and client command lines of exanet-pingpong / udp-pingpong."""
    common = "--sizes %s --iters %d --warmup %d %s" % (sizes, iters, warmup, extra)
    server = "%s --server --oob %d %s" % (tool, port, extra)
    client = "%s --client --oob %s:%d %s%s" % (
        tool, Cluster.node_ip(server_node), port, common, " --json" if json_out else "")
    return server, client


def rdma_bw_cmds(port, size, iters, extra="", server=1):
    """Server and client command lines of exanet-rdma-bw (RDMA writes)."""
    return ("exanet-rdma-bw --server --oob %d" % port,
            "exanet-rdma-bw --client --oob %s:%d --sizes %d --iters %d --warmup 2 --json %s" % (
                Cluster.node_ip(server), port, size, iters, extra))


def rdma_bw(c, port, size, iters, extra=""):
    """ExaNet RDMA write bandwidth node 0 -> node 1 (exanet-rdma-bw):
    (MB/s, the tool's JSON result)."""
    server, client = rdma_bw_cmds(port, size, iters, extra)
    out, _ = run_pair(c, server, client, timeout=600)
    res = parse_json_line(out)
    row = res["results"][0]
    if row["errors"] or res["status"] != "ok":
        raise PairError("RDMA bandwidth run had errors: %s" % res)
    return row["mb_s"], res


def parse_json_line(output):
    """The tools print one JSON object on stdout; stderr may be mixed in."""
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise PairError("no JSON object in output:\n" + output)


def strace_total_calls(summary):
    """Total system calls from an `strace -c` summary table."""
    m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total\s*$",
                  summary, re.M)
    if not m:
        raise PairError("cannot parse strace summary:\n" + summary)
    return int(m.group(1))


def row_of(result, size):
    """The result row of one message size."""
    for row in result["results"]:
        if row["size"] == size:
            return row
    raise PairError("size %d missing from %r" % (size, result))


def median_of(result, size):
    return row_of(result, size)["median_us"]


def p99_of(result, size):
    return row_of(result, size)["p99_us"]


# ------------------------------------------------------------- the torus
TORUS_SHAPE = "2x2x2"
# 2x2x2, dimension order, ties the + way: node 0 -> 1 is one hop (0's x+),
# 0 -> 3 two (0 x+ 1 y+ 3), 0 -> 7 three
HOP_PEERS = {1: 1, 2: 3, 3: 7}
# Streams for the link-sharing figures: one over 0's x+; two that share 1's
# y+ (0 -> 3 goes 0 x+ 1 y+ 3); two over disjoint links (0's and 2's x+)
LINK_SHARE_CASES = (("single", [(0, 1)]), ("shared", [(0, 3), (1, 3)]),
                    ("disjoint", [(0, 1), (2, 3)]))
# 1 MiB writes per stream: long enough (5-11 s at 200 Mb/s) that the second
# or so by which the streams' starts differ on a loaded host does not
# decide the shares
LINK_SHARE_ITERS = 128


def set_all_links(c, action, nic="all"):
    """One exacluster fault action (e.g. "mbps=200", "ns=0") on every port
    of every node."""
    for n in range(c.nodes):
        for p in ("x+", "x-", "y+", "y-", "z+", "z-"):
            c.fault(n, p, action, nic=nic)


def rdma_streams(c, pairs, port, size, iters):
    """Concurrent exanet-rdma-bw write streams, one per (client, server)
    pair, the servers started first so the clients start together: MB/s of
    each stream (in client order) and the clients' results."""
    clients = {}
    for k, (a, b) in enumerate(pairs):
        srv, cli = rdma_bw_cmds(port + k, size, iters, server=b)
        cluster_run(c, b, "(%s > /tmp/bwsrv%d.log 2>&1 &)" % (srv, port + k))
        clients.setdefault(a, []).append(cli + " & ")
    time.sleep(1)
    res = c.run_all({a: "".join(v) + "wait" for a, v in clients.items()}, timeout=900)
    rates = []
    for a in sorted(clients):
        for line in res[a].output.splitlines():
            if line.startswith("{"):
                rates.append(json.loads(line)["results"][0]["mb_s"])
    if len(rates) != len(pairs):
        raise PairError("RDMA streams %s: %s" % (pairs, {n: r.output[-600:]
                                                         for n, r in res.items()}))
    return rates, res


def cluster_run(c, node, cmd, timeout=30):
    r = c.run(node, cmd, timeout=timeout)
    if r.rc != 0:
        raise PairError("node %d: %r exited %d: %s" % (node, cmd, r.rc, r.output[-400:]))
    return r.output


EXT0 = "/machine/peripheral/ext0"
EXA0 = "/machine/peripheral/exa0"
# Per message tool: the NI device on the nodes and the MMIO reads of the
# register its receiving software polls the NI with (a model counter)
POLL_READS = {"velo2-pingpong": (EXT0, "velo-credit-reads", "VELO"),
              "exanet-pingpong": (EXA0, "mbox-tail-reads", "ExaNet")}


def rx_reads_per_msg(c, port, tool="velo2-pingpong", env="", window=1.0):
    """MMIO reads of the polled register (POLL_READS) on node 1 per message
    it receives, in the steady state of a long 8 B ping-pong of `tool` from
    node 0 (its start, where the server waits for the client, left out):
    counters sampled `window` seconds apart, messages counted by node 0's
    direct-tx (direct delivery must be on).  Returns (messages in the
    window, reads per message)."""
    dev, prop, what = POLL_READS[tool]

    def sample():
        return (c.qmp(1, "qom-get", {"path": dev, "property": prop}),
                c.qmp(0, "qom-get", {"path": dev, "property": "direct-tx"}))

    spid, _ = c.spawn(1, "%s %s --server --oob %d --timeout 60" % (env, tool, port))
    cpid, _ = c.spawn(0, "sleep 0.5; %s %s --client --oob %s:%d --sizes 8 "
                      "--iters 10000000 --warmup 10 --timeout 60"
                      % (env, tool, Cluster.node_ip(1), port))
    try:
        time.sleep(2.0)
        r0, t0 = sample()
        time.sleep(window)
        r1, t1 = sample()
    finally:
        c.run(0, "kill %d" % cpid, timeout=20)
        c.run(1, "kill %d" % spid, timeout=20)
    msgs = t1 - t0
    if msgs <= 0:
        raise PairError("no %s message from node 0 to node 1 in %.1f s of a ping-pong "
                        "(direct delivery off, or the tools did not start)" % (what, window))
    return msgs, (r1 - r0) / float(msgs)


def direct_side(c, tool, port, iters, bw_iters, direct, poll_off_env):
    """One round of the direct-delivery comparison on one cluster: `tool`'s
    8 B latency and stream rate, and with direct delivery the receiver's
    MMIO reads per message, also with `poll_off_env` (the library polls the
    NI on every empty receive)."""
    server, client = pingpong_cmds(tool, "8", iters, iters // 10, port, "-t 60")
    out, _ = run_pair(c, server, client, timeout=600)
    lat = parse_json_line(out)["results"][0]
    server, client = pingpong_cmds(tool, "8", bw_iters, bw_iters // 10, port + 1, "--bw -t 60")
    out, _ = run_pair(c, server, client, timeout=1800)
    bw = parse_json_line(out)["results"][0]
    res = {"lat_us": lat["median_us"], "p99_us": lat["p99_us"], "msg_rate": bw["msg_s"],
           "direct_tx": c.qmp(0, "qom-get", {"path": POLL_READS[tool][0],
                                             "property": "direct-tx"})}
    if direct:
        # on the rings direct-tx counts nothing: the library's own switch there
        res["rx_mmio_reads_per_msg"] = rx_reads_per_msg(c, port + 2, tool)[1]
        res["rx_mmio_reads_per_msg_nic_poll"] = rx_reads_per_msg(c, port + 3, tool,
                                                                 poll_off_env)[1]
    return res


def direct_comparison(name, tool, args, poll_off_env, port, **cluster_kw):
    """`tool` with direct delivery against the fabric rings in one run: two
    2-node clusters side by side, --rounds alternated rounds of
    direct_side(); medians of the runs' figures and the ratios."""
    rounds = {"direct": [], "rings": []}
    with Cluster(nodes=2, name="%s-direct" % name, direct=True, **cluster_kw) as cd, \
            Cluster(nodes=2, name="%s-rings" % name, direct=False, **cluster_kw) as cr:
        cd.wait_settled()
        cr.wait_settled()
        for r in range(args.rounds):
            for key, c in (("direct", cd), ("rings", cr)):
                port += 4
                print("%s: direct delivery round %d of %d: %s, 8 B %s latency and stream"
                      % (name, r + 1, args.rounds, key, tool), flush=True)
                rounds[key].append(direct_side(c, tool, port, args.iters, args.bw_iters,
                                               key == "direct", poll_off_env))
    out = {"rounds": rounds}
    for key, runs in rounds.items():
        lat = statistics.median(x["lat_us"] for x in runs)
        rate = statistics.median(x["msg_rate"] for x in runs)
        out[key] = {"lat_8B_us": round(lat, 3),
                    "p99_8B_us": round(statistics.median(x["p99_us"] for x in runs), 3),
                    "msg_rate_8B": round(rate),
                    "msg_rate_x_lat": round(rate * lat * 1e-6, 3)}
        for k in ("rx_mmio_reads_per_msg", "rx_mmio_reads_per_msg_nic_poll"):
            if k in runs[0]:
                out[key][k] = round(statistics.median(x[k] for x in runs), 3)
    d, o = out["direct"], out["rings"]
    out["lat_8B_direct_over_rings"] = (round(d["lat_8B_us"] / o["lat_8B_us"], 3)
                                       if o["lat_8B_us"] > 0 else None)
    out["msg_rate_8B_direct_over_rings"] = (round(d["msg_rate_8B"] / o["msg_rate_8B"], 3)
                                            if o["msg_rate_8B"] > 0 else None)
    return out


def print_direct(name, what, poll_off_env, d):
    for key in ("direct", "rings"):
        x = d[key]
        print("%s: %s 8 B %-6s latency %.2f us (p99 %.2f), %d msg/s, %.2f per latency"
              % (name, what, key, x["lat_8B_us"], x["p99_8B_us"], x["msg_rate_8B"],
                 x["msg_rate_x_lat"]))
    x = d["direct"]
    print("%s: receiver MMIO reads per message: %.3f (direct, memory polled), %.3f (%s)"
          % (name, x["rx_mmio_reads_per_msg"], x["rx_mmio_reads_per_msg_nic_poll"],
             poll_off_env))
    print("%s: direct / rings: latency x %s, message rate x %s"
          % (name, d["lat_8B_direct_over_rings"], d["msg_rate_8B_direct_over_rings"]))
