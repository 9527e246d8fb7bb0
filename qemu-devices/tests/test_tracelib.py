#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit test (TAP) of tools/bench/tracelib.py, the trace reader
behind make bench-latency: the message formats match the trace-events
files, and a hand-made two-node trace of one message each way gives the
expected stage times."""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tools", "bench"))
sys.path.insert(0, os.path.join(TOP, "tools", "cluster"))
import tracelib  # noqa: E402
from taplib import check, report  # noqa: E402


def trace_formats():
    """event -> format string of qemu-devices/*/trace-events."""
    fmts = {}
    for d in ("common", "exanet", "extoll"):
        with open(os.path.join(TOP, "qemu-devices", d, "trace-events")) as f:
            for line in f:
                m = re.match(r'^(\w+)\(.*\) "(.*)"(.*)$', line.strip())
                if m:
                    fmts[m.group(1)] = m.group(2) + m.group(3)
    return fmts


def render(fmt, args):
    """What the log backend prints for fmt (PRI macros as in C)."""
    fmt = re.sub(r'"?PRI([xud])64"?', r"\1", fmt).replace("%zu", "%u")
    return fmt % tuple(args)


# one-way messages: node 0 -> node 1 (seq 5), node 1 -> node 0 (seq 9);
# (tid, usec, event, args in trace-events order)
N0 = [
    (10, 100, "exanet_pkt_payload", (0, 0, 1, 0, 8)),
    (10, 103, "exanet_doorbell", (0, 0, 1, 0x10008)),
    (10, 104, "exanet_tx", (0, 0, 1, 1, 0, 5, 8)),
    (10, 120, "fabric_nic_send", (0, 1, 1, 36, 0)),
    (11, 160, "fabric_qemu_rx_wake", (0, 1, 0)),
    (11, 161, "fabric_qemu_rx", (0, "thread", 1, 2, 12)),
    (11, 162, "exanet_ack", (0, 1, 0, 1, 5)),
    (11, 210, "fabric_qemu_rx_wake", (0, 1, 0)),
    (11, 214, "fabric_qemu_rx", (0, "thread", 1, 1, 36)),
    (11, 216, "exanet_rx", (0, 1, 2, 3, 0, 9, 8)),
    (11, 218, "exanet_mbox_write", (0, 0, 4, 0xffffea00, 8)),
    (11, 221, "exanet_mbox_notify", (0, 0, 4, 1)),
    (10, 250, "exanet_pkt_payload", (0, 0, 2, 0, 8)),
]
N1 = [
    (20, 130, "fabric_qemu_rx_wake", (1, 1, 0)),
    (20, 135, "fabric_qemu_rx", (1, "thread", 0, 1, 36)),
    (20, 137, "exanet_rx", (1, 0, 0, 1, 0, 5, 8)),
    (20, 140, "exanet_mbox_write", (1, 0, 7, 0xffffe000, 8)),
    (20, 142, "exanet_mbox_notify", (1, 0, 7, 0)),
    (20, 143, "exanet_reply", (1, 0, "ACK", 0, 1, 5, 0)),
    (21, 180, "exanet_pkt_payload", (1, 2, 3, 0, 8)),
    (21, 182, "exanet_doorbell", (1, 2, 3, 0x8)),
    (21, 183, "exanet_tx", (1, 2, 3, 0, 0, 9, 8)),
    (21, 190, "fabric_nic_send", (1, 0, 1, 36, 0)),
]


# Engines: an RDMA write 0 -> 1, an RDMA read by 0 from 1, an RMA put
# 0 -> 1, with decoys that must not match (an ACK sent and taken before the
# block, a poll before the notification, a read trigger for the write).
E0 = [
    (30, 1000, "exanet_rdma_trigger", (0, 0, 0, 1, 0, 8, 1)),
    (30, 1001, "exanet_rdma_send", (0, 1, 17)),
    (30, 1002, "exanet_rdma_send", (0, 1, 16)),
    (30, 2000, "exanet_rdma_trigger", (0, 0, 32, 1, 0, 8, 1)),
    (30, 2001, "exanet_rdma_send", (0, 1, 18)),
    (31, 2020, "fabric_qemu_bulk_rx", (0, 1, 16, 72, 8, 1)),
    (31, 2021, "exanet_rdma_notify", (0, 0, 0x2000, 2, 2, 0, 0)),
    (30, 2024, "exanet_rdma_notifs_poll", (0, 0, 1)),
    (50, 3000, "extoll_rma_cmd", (0, 2, 2, 1, 3, 0)),
    (50, 3002, "extoll_tx", (0, 1, 0, 7, 2, 8)),
]
E1 = [
    (40, 990, "exanet_rdma_notifs_poll", (1, 0, 0)),
    (40, 1010, "fabric_qemu_bulk_rx", (1, 0, 17, 24, 0, 1)),
    (40, 1012, "fabric_qemu_bulk_rx", (1, 0, 16, 72, 8, 1)),
    (40, 1013, "exanet_rdma_notify", (1, 0, 0x1000, 1, 1, 0, 0)),
    (40, 1016, "exanet_rdma_notifs_poll", (1, 0, 1)),
    (41, 2010, "fabric_qemu_bulk_rx", (1, 0, 18, 56, 0, 1)),
    (41, 2011, "exanet_rdma_send", (1, 0, 16)),
    (60, 3010, "extoll_rx", (1, 0, 0, 7, 2, 8)),
    (60, 3011, "extoll_noti_write", (1, 3, 0, 1, 2)),
    (61, 3015, "extoll_rma_noti_poll", (1, 3, 1)),
]


# The same two messages with the receiver of the first asleep: the sender's
# doorbell datagram, then the interrupt after the notification on node 1.
S0 = N0[:3] + [(10, 105, "fabric_qemu_doorbell", (0, 1))] + N0[3:]
S1 = N1[:5] + [(20, 150, "exanet_irq", (1, "mailbox", 0, 1)),
               (21, 160, "exanet_ctrl_write", (1, 0x2014, 0x80000001)),
               (21, 165, "exanet_ctrl_write", (1, 0x30, 1))] + N1[5:]


def sleeping(fmts, d):
    paths, evs = write_read(d, "s", [S0, S1], fmts, "read_events keeps the sleep events")
    bd = tracelib.sleep_breakdown(tracelib.messages(evs))
    st = {s["name"]: s["median_us"] for s in bd["stages"]}
    check("sleeping receiver: interrupt stages of the message that raised one",
          bd["messages_used"] == 1 and bd["messages_without_interrupt"] == 1
          and bd["doorbells"] == 1 and st["irq_raise"] == 8.0 and st["guest_irq_entry"] == 15.0
          and st["guest_wake"] == 15.0
          and "guest_poll" not in st, bd)
    check("sleeping receiver: stages add up to the one-way total",
          bd["total"]["mean_us"] == 80.0 and
          sum(s["mean_us"] for s in bd["stages"]) == 80.0, bd)
    for p in paths:
        os.unlink(p)


def write_read(d, prefix, per_node, fmts, what):
    """Write one trace file per node, read them back, check that every
    line came back: (paths, events per node)."""
    paths = [os.path.join(d, "%s%d.trace" % (prefix, i)) for i in range(len(per_node))]
    for path, evs in zip(paths, per_node):
        write(path, evs, fmts)
    evs = [tracelib.read_events(p) for p in paths]
    check(what, [len(e) for e in evs] == [len(e) for e in per_node], [len(e) for e in evs])
    return paths, evs


def engines(fmts, d):
    paths, evs = write_read(d, "e", [E0, E1], fmts, "read_events keeps the engine events")
    base = 1700000000000000
    got = {}
    for eng in ("rdma_write", "rdma_read", "rma_put", "rma_get"):
        tr = tracelib.engine_transfers(evs, eng)
        got[eng] = [{k: v - base for k, v in t.items()} for t in tr]
    want = {
        "rdma_write": [{"trigger": 1000, "sent": 1002, "taken": 1012, "written": 1013,
                        "seen": 1016}],
        "rdma_read": [{"trigger": 2000, "request_sent": 2001, "request_taken": 2010,
                       "answer_sent": 2011, "answer_taken": 2020, "written": 2021,
                       "seen": 2024}],
        "rma_put": [{"trigger": 3000, "sent": 3002, "taken": 3010, "written": 3011,
                     "seen": 3015}],
        "rma_get": [],
    }
    check("engine transfers matched step by step (decoys skipped, no get)", got == want, got)
    bd = tracelib.engine_breakdown(tracelib.engine_transfers(evs, "rdma_write"), "rdma_write")
    st = {x["name"]: x["median_us"] for x in bd["stages"]}
    check("RDMA write stages add up to its total",
          st == {"device_tx": 2.0, "fabric": 10.0, "target_dma": 1.0, "seen": 3.0}
          and bd["total"]["median_us"] == 16.0, (st, bd["total"]))
    for p in paths:
        os.unlink(p)


def write(path, evs, fmts):
    with open(path, "w") as f:
        f.write("qemu: some unrelated log line\n")
        for tid, t, ev, args in evs:
            f.write("%d@%d.%06d:%s %s\n" % (tid, 1700000000 + t // 1000000, t % 1000000, ev,
                                          render(fmts[ev], args)))


def main():
    fmts = trace_formats()
    missing = [e for e in tracelib.FIELDS if e not in fmts]
    check("every event the reader knows is in a trace-events file", not missing, missing)
    bad = []
    # a copy of seq 5 that a retransmission brought again
    dup = [(20, 300, "exanet_rx", (1, 0, 0, 1, 0, 5, 8)),
           (20, 301, "exanet_rx_duplicate", (1, 0, 0, 1, 5))]
    for ev, args in [(e[2], e[3]) for e in S0 + S1 + E0 + E1 + dup]:
        if ev in fmts and tracelib.fields(ev, render(fmts[ev], args)) is None:
            bad.append((ev, render(fmts[ev], args)))
    check("the reader parses what the trace-events formats print", not bad, bad)
    check("a malformed message is refused",
          tracelib.fields("exanet_tx", "node 0 iface x chan 1") is None)
    if missing:
        return report()

    d = tempfile.mkdtemp(prefix="tracelib-")
    paths, evs = write_read(d, "n", [N0, N1], fmts, "read_events keeps the trace lines only")
    msgs = tracelib.messages(evs)
    m = msgs.get((0, 0, 1, 5), {})
    want = {"payload": 1700000000000100, "doorbell": 1700000000000103,
            "tx": 1700000000000104, "send": 1700000000000120,
            "wake": 1700000000000130, "dispatch": 1700000000000135,
            "rx": 1700000000000137, "dma": 1700000000000140,
            "notify": 1700000000000142, "seen": 1700000000000180,
            "ack": 1700000000000162, "ctx": "thread"}
    diff = {k: (m.get(k), v) for k, v in want.items() if m.get(k) != v}
    check("message 0 -> 1 seq 5: every timestamp matched across the nodes", not diff, diff)
    bd = tracelib.breakdown(msgs)
    st = {s["name"]: s["median_us"] for s in bd["stages"]}
    # two messages: 0->1 (3,1,26,5,5,2,38) and 1->0 (2,1,27,4,4,3,29)
    check("stage medians of the two messages",
          st == {"guest_store": 2.5, "device_tx": 1.0, "fabric_wakeup": 26.5,
                 "rx_bql": 4.5, "rx_handle": 4.5, "dma_notify": 2.5, "guest_poll": 33.5},
          st)
    check("stages add up to the one-way total",
          bd["messages_used"] == 2 and bd["total"]["mean_us"] ==
          sum(s["mean_us"] for s in bd["stages"]), (bd["total"], bd["stages"]))
    check("ACK and send() times, receive contexts",
          bd["ack_round_trip"]["samples"] == 1 and bd["ack_round_trip"]["median_us"] == 58.0
          and bd["send_syscall"]["median_us"] == 11.5
          and bd["receive_context"] == {"thread": 2}, bd)
    for p in paths:
        os.unlink(p)
    engines(fmts, d)
    sleeping(fmts, d)
    os.rmdir(d)
    return report()


if __name__ == "__main__":
    sys.exit(main())
