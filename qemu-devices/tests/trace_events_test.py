#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""QEMU trace events of the device models, end to end (TAP; run by
run-trace-vm-tests.sh): boot two nodes with `exacluster --trace` for a few
events, send one 8-byte packetizer message each way (exanet-pingpong,
one round trip) and check that each node's trace file has exactly the
enabled events, with the fields of that message: node ids, the same
interface / channel / sequence / mailbox on both sides, length 8, a
notification after the receive, timestamps in order on the shared host
clock.  On a loaded host an ACK can come later than the sender's
retransmission timeout; the copy the retransmission carries then arrives
as a second exanet_rx, which the receiver must recognise
(exanet_rx_duplicate) and not deliver again."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD") or os.path.join(TOP, "build")
sys.path.insert(0, os.path.join(TOP, "tools", "cluster"))
sys.path.insert(0, os.path.join(TOP, "tools", "bench"))

sys.path.insert(0, HERE)
from exacluster import Cluster, ClusterError  # noqa: E402
import tracelib  # noqa: E402
from taplib import check, report  # noqa: E402

ENABLED = ["exanet_tx", "exanet_retransmit", "exanet_rx", "exanet_rx_duplicate",
           "exanet_mbox_notify", "fabric_nic_send*"]
PORT = 5190


def events(path):
    """(tid, t, event, message) of every trace line of the file."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            p = tracelib.parse_line(line)
            if p:
                out.append(p)
    return out


def one(evs, name, **want):
    """The events called name whose fields include want."""
    got = []
    for tid, t, ev, msg in evs:
        if ev != name:
            continue
        fl = tracelib.fields(ev, msg)
        if fl is not None and all(fl.get(k) == v for k, v in want.items()):
            fl["t"] = t
            got.append(fl)
    return got


def arrivals(sender, receiver, tx):
    """The exanet_rx events of message tx at the receiver, and whether they
    are one arrival plus copies the receiver saw as duplicates, no more
    copies than the sender retransmitted."""
    key = dict(iface=tx["iface"], chan=tx["chan"], seq=tx["seq"])
    rx = one(receiver, "exanet_rx", src=tx["node"], mbox=tx["mbox"], len=tx["len"], **key)
    dups = one(receiver, "exanet_rx_duplicate", src=tx["node"], **key)
    retx = one(sender, "exanet_retransmit", node=tx["node"], dst=tx["dst"], **key)
    return rx, (len(rx) == 1 + len(dups) and len(dups) <= len(retx),
                "rx %s duplicates %s retransmits %s" % (rx, dups, retx))


def main():
    if not os.path.exists(os.path.join(BUILD, "initramfs.cpio.gz")):
        print("Bail out! no %s/initramfs.cpio.gz (make initramfs)" % BUILD)
        return 1
    try:
        # the ring path, whose receiver handles each packet (with direct
        # delivery the sender writes the mailbox: no exanet_rx to check)
        with Cluster(nodes=2, name="trace-test", trace=ENABLED, direct=False) as c:
            srv = "exanet-pingpong --server --oob %d" % PORT
            cli = "exanet-pingpong --client --oob %s:%d --sizes 8 --iters 1 --warmup 0" % (
                Cluster.node_ip(1), PORT)
            res = c.run_all({1: srv, 0: cli}, timeout=120)
            files = [c.trace_log(i) for i in range(2)]
            rundir = c.rundir
    except ClusterError as e:
        print("Bail out! cluster: %s" % e)
        return 1
    check("one round trip of exanet-pingpong", res[0].rc == 0 and res[1].rc == 0,
          "client rc %d, server rc %d:\n%s%s" % (res[0].rc, res[1].rc, res[0].output,
                                                 res[1].output))
    ok_files = all(os.path.exists(f) for f in files)
    check("a trace file per node in the run directory", ok_files, " ".join(files))
    if not ok_files:
        return report()
    evs = [events(f) for f in files]
    names = set(ev for e in evs for _, _, ev, _ in e)
    check("only the enabled events are traced",
          names <= {"exanet_tx", "exanet_retransmit", "exanet_rx", "exanet_rx_duplicate",
                    "exanet_mbox_notify", "fabric_nic_send"}
          and "exanet_tx" in names, "events seen: %s" % sorted(names))
    for i in range(2):
        bad = [m for _, _, ev, m in evs[i] if tracelib.fields(ev, m) is None
               or tracelib.fields(ev, m)["node"] != i]
        check("node %d: every message parses and names node %d" % (i, i), not bad, bad[:3])

    tx = one(evs[0], "exanet_tx", node=0, dst=1, len=8)
    check("node 0: exactly one exanet_tx to node 1, 8 bytes", len(tx) == 1, tx)
    if len(tx) == 1:
        t = tx[0]
        rx, once = arrivals(evs[0], evs[1], t)
        check("node 1: exanet_rx of that message (iface %u chan %u seq %u mbox %u), "
              "any copy a duplicate" % (t["iface"], t["chan"], t["seq"], t["mbox"]), *once)
        send = [e for e in one(evs[0], "fabric_nic_send", node=0, dst=1, type=1)
                if e["t"] >= t["t"]]
        check("node 0: fabric_nic_send of the DATA packet (28 + 8 bytes, sent)",
              send and send[0]["len"] == 36 and send[0]["ret"] == 0, send)
        if rx:
            r = rx[0]
            # (not after fabric_nic_send: the receiver may handle the
            # packet while the sender is still inside send())
            check("receive after exanet_tx on the host clock, within 1 s",
                  t["t"] <= r["t"] <= t["t"] + 1000000,
                  "tx %s rx %s" % (t["t"], r["t"]))
            nt = [e for e in one(evs[1], "exanet_mbox_notify", node=1, mbox=t["mbox"])
                  if e["t"] >= r["t"]]
            check("node 1: notification of mailbox %u after the receive, phase bit only"
                  % t["mbox"], nt and nt[0]["flags"] in (0, 1), nt)
    echo = one(evs[1], "exanet_tx", node=1, dst=0, len=8)
    back, once = arrivals(evs[1], evs[0], echo[0]) if len(echo) == 1 else ([], (False, ""))
    check("the echo: node 1 exanet_tx to node 0, received by node 0, any copy a duplicate",
          len(echo) == 1 and once[0] and echo[0]["t"] <= back[0]["t"], (echo, once[1]))
    acks = one(evs[1], "fabric_nic_send", node=1, dst=0, type=2, len=12)
    check("node 1: the ACK goes back over the fabric (type 2, 12 bytes)", acks, acks)
    rc = report()
    if rc:
        print("# trace files kept in %s" % rundir)
    return rc


if __name__ == "__main__":
    sys.exit(main())
