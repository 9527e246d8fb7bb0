# SPDX-License-Identifier: GPL-2.0
"""Read the QEMU trace files of an emulated cluster (exacluster --trace,
log backend with -msg timestamp=on) and break one-way ExaNet packetizer
messages down into stages.

A trace line is "<tid>@<sec>.<usec>:<event> <message>"; the message is the
format of the event in qemu-devices/*/trace-events.  Timestamps are the
host's wall clock (gettimeofday, microseconds), the same clock in every
node's QEMU, so events of two nodes can be subtracted."""

import re

LINE_RE = re.compile(r"^(\d+)@(\d+)\.(\d{6}):(\w+) (.*)$")

# Message formats of the events the breakdown uses (qemu-devices/*/trace-events).
_N = r"^node (?P<node>\d+)"
FIELDS = {
    "exanet_pkt_payload": _N + r" iface (?P<iface>\d+) chan (?P<chan>\d+) payload store "
                          r"off (?P<off>\d+) size (?P<size>\d+)$",
    "exanet_doorbell": _N + r" iface (?P<iface>\d+) chan (?P<chan>\d+) doorbell "
                       r"(?P<db>0x[0-9a-f]+)$",
    "exanet_tx": _N + r" iface (?P<iface>\d+) chan (?P<chan>\d+) -> node (?P<dst>\d+) "
                 r"mbox (?P<mbox>\d+) seq (?P<seq>\d+) len (?P<len>\d+)$",
    "exanet_retransmit": _N + r" iface (?P<iface>\d+) chan (?P<chan>\d+) -> node (?P<dst>\d+) "
                         r"seq (?P<seq>\d+) retry (?P<retries>\d+)$",
    "exanet_rx": _N + r" <- node (?P<src>\d+) iface (?P<iface>\d+) chan (?P<chan>\d+) "
                 r"mbox (?P<mbox>\d+) seq (?P<seq>\d+) len (?P<len>\d+)$",
    "exanet_rx_duplicate": _N + r" <- node (?P<src>\d+) iface (?P<iface>\d+) chan (?P<chan>\d+) "
                           r"seq (?P<seq>\d+): duplicate, ACKed again$",
    "exanet_mbox_write": _N + r" mbox (?P<mbox>\d+) slot (?P<slot>\d+) "
                         r"addr (?P<addr>0x[0-9a-f]+) len (?P<len>\d+)$",
    "exanet_mbox_notify": _N + r" mbox (?P<mbox>\d+) slot (?P<slot>\d+) "
                          r"flags (?P<flags>0x[0-9a-f]+)$",
    "exanet_reply": _N + r" -> node (?P<dst>\d+) (?P<what>ACK|NACK) iface (?P<iface>\d+) "
                    r"chan (?P<chan>\d+) seq (?P<seq>\d+) reason (?P<reason>\d+)$",
    "exanet_ack": _N + r" <- node (?P<src>\d+) ACK iface (?P<iface>\d+) chan (?P<chan>\d+) "
                  r"seq (?P<seq>\d+)$",
    "exanet_nack": _N + r" <- node (?P<src>\d+) NACK iface (?P<iface>\d+) chan (?P<chan>\d+) "
                   r"seq (?P<seq>\d+) reason (?P<reason>\d+)$",
    "fabric_nic_send": _N + r" -> (?P<dst>\d+) type (?P<type>\d+) len (?P<len>\d+): "
                       r"(?P<ret>-?\d+)$",
    "fabric_qemu_rx_wake": _N + r": receive thread woke \(rx (?P<rx>\d) kick (?P<kick>\d)\)$",
    "fabric_qemu_doorbell": _N + r" -> (?P<dst>\d+): the packet ring was armed .*$",
    "exanet_irq": _N + r" (?P<what>\w+) (?P<src>\d+) vector (?P<vector>\d+)$",
    "exanet_ctrl_write": _N + r" off (?P<off>0x[0-9a-f]+) val (?P<val>0x[0-9a-f]+)$",
    "fabric_qemu_rx": _N + r" (?P<ctx>\w+): from (?P<src>\d+) type (?P<type>\d+) "
                      r"len (?P<len>\d+)$",
    # RDMA and RMA (engine_transfers())
    "fabric_qemu_bulk_rx": _N + r": bulk record from (?P<src>\d+) type (?P<type>\d+) "
                           r"hlen (?P<hlen>\d+) dlen (?P<dlen>\d+) data_ok (?P<ok>\d)$",
    "exanet_rdma_trigger": _N + r" page (?P<page>\d+) chan (?P<chan>\d+) -> node (?P<dst>\d+) "
                           r"rank (?P<rank>\d+) len (?P<len>\d+) seq (?P<seq>\d+)$",
    "exanet_rdma_send": _N + r" -> node (?P<dst>\d+) type (?P<type>\d+)$",
    "exanet_rdma_rx_block": _N + r" <- node (?P<src>\d+) page (?P<page>\d+) chan (?P<chan>\d+) "
                            r"seq (?P<seq>\d+) block (?P<block>\d+) op (?P<op>\d+) "
                            r"data_ok (?P<ok>\d)$",
    "exanet_rdma_notify": _N + r" rank (?P<rank>\d+) va (?P<va>0x[0-9a-f]+) tag (?P<tag>0x[0-9a-f]+) "
                          r"op (?P<op>\d+) err (?P<err>\d+) flags (?P<flags>0x[0-9a-f]+)$",
    "exanet_rdma_notifs_poll": _N + r" page (?P<page>\d+) notifs (?P<notifs>\d+) \(.*\)$",
    "extoll_rma_store": _N + r" VPID (?P<vpid>\d+) page (?P<page>\d+) word (?P<word>\d+) "
                        r"val (?P<val>0x[0-9a-f]+)$",
    "extoll_rma_cmd": _N + r" VPID (?P<vpid>\d+) cmd (?P<cmd>\d+) -> node (?P<dst>\d+) "
                      r"VPID (?P<dvpid>\d+) queued (?P<queued>\d)$",
    "extoll_tx": _N + r" -> node (?P<dst>\d+) chan (?P<chan>\d+) seq (?P<seq>\d+) "
                 r"kind (?P<kind>\d+) len (?P<len>\d+)$",
    "extoll_rx": _N + r" <- node (?P<src>\d+) chan (?P<chan>\d+) seq (?P<seq>\d+) "
                 r"kind (?P<kind>\d+) len (?P<len>\d+)$",
    "extoll_noti_write": _N + r" VPID (?P<vpid>\d+) slot (?P<slot>\d+) w0 (?P<w0>0x[0-9a-f]+) "
                         r"w1 (?P<w1>0x[0-9a-f]+)$",
    "extoll_rma_noti_poll": _N + r" vpid (?P<vpid>\d+) count (?P<count>\d+) \(.*\)$",
}

# What latency-breakdown enables (no DMA events: mbox_write / mbox_notify
# bracket the mailbox DMA, and fewer events cost less).
BREAKDOWN_EVENTS = ["exanet_pkt_payload", "exanet_doorbell", "exanet_tx", "exanet_retransmit",
                    "exanet_rx", "exanet_mbox_write", "exanet_mbox_notify", "exanet_reply",
                    "exanet_ack", "exanet_nack", "fabric_nic_send", "fabric_qemu_rx_wake",
                    "fabric_qemu_rx"]

# A message to a receiver that sleeps on the NI's interrupt (exanet-pingpong
# --sleep): the same events, plus the doorbell datagram that wakes the
# receiving emulator and the interrupt the NI raises.
SLEEP_EVENTS = BREAKDOWN_EVENTS + ["fabric_qemu_doorbell", "exanet_irq", "exanet_ctrl_write"]
# the driver's interrupt handler clears what it read (write 1 to clear)
EXA_REG_IRQ_MBOX_PENDING = 0x030

EXA_PKT_DATA = 1

# (name, from, to, description); "from"/"to" are per-message timestamps.
STAGES = [
    ("guest_store", "payload", "doorbell",
     "sender guest: first payload store to the doorbell store (MMIO exits)"),
    ("device_tx", "doorbell", "tx",
     "sender NI: doorbell decoded, packet built, retransmit timer armed"),
    ("fabric_wakeup", "tx", "wake",
     "host: packet sent until the receiver takes it (packet ring: the receiving vCPU's "
     "next poll; datagram or doorbell: its fabric thread is awake)"),
    ("rx_bql", "wake", "dispatch",
     "receiving QEMU: fabric thread awake to packet handled (waits for the BQL)"),
    ("rx_handle", "dispatch", "dma",
     "receiver NI: packet checks, dedup, slot built"),
    ("dma_notify", "dma", "notify",
     "receiver NI: slot body DMA into the mailbox, then the flags word (notification)"),
    ("guest_poll", "notify", "seen",
     "receiver guest: slot visible to its next payload store (poll, turnaround)"),
]


# A sleeping receiver: the fabric stage is the doorbell datagram and the
# wake-up of the receiving emulator's fabric thread; after the mailbox
# notification the NI raises the interrupt, and the guest's part is its
# vCPU leaving HLT, the interrupt handler, the waiter's wake-up and task
# switch, poll() returning and the tool's turnaround to the reply.
SLEEP_STAGES = [s for s in STAGES if s[0] != "guest_poll"] + [
    ("irq_raise", "notify", "irq",
     "receiver NI: notification written to the interrupt raised (MSI-X)"),
    ("guest_irq_entry", "irq", "handler",
     "receiver guest: interrupt raised until the driver's handler clears PENDING (vCPU "
     "out of HLT, interrupt entry, the handler's PENDING read)"),
    ("guest_wake", "handler", "seen",
     "receiver guest: handler to its next payload store (waiter woken, task switch, "
     "poll() returns, the tool's turnaround)"),
]


class TraceError(Exception):
    pass


def parse_line(line):
    """(tid, usec, event, message) or None for non-trace lines."""
    m = LINE_RE.match(line.rstrip("\n"))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)) * 1000000 + int(m.group(3)), m.group(4), m.group(5)


def fields(event, message):
    """The named fields of a message (ints where numeric), or None if the
    event is unknown or its message does not have the expected format."""
    rx = FIELDS.get(event)
    if rx is None:
        return None
    m = re.match(rx, message)
    if not m:
        return None
    out = {}
    for k, v in m.groupdict().items():
        if re.fullmatch(r"-?\d+", v):
            out[k] = int(v)
        elif v.startswith("0x"):
            out[k] = int(v, 16)
        else:
            out[k] = v
    return out


def read_events(path):
    """All known events of one trace file, in file order:
    list of dicts with tid, t (microseconds), ev, and the event's fields.
    Raises TraceError for a known event whose message does not parse."""
    evs = []
    with open(path, errors="replace") as f:
        for line in f:
            p = parse_line(line)
            if not p or p[2] not in FIELDS:
                continue
            fl = fields(p[2], p[3])
            if fl is None:
                raise TraceError("%s: unexpected format: %s" % (path, line.strip()))
            fl.update(tid=p[0], t=p[1], ev=p[2])
            evs.append(fl)
    return evs


def _sender_side(evs, msgs):
    """Walk one node's events: payload, doorbell, tx and send times of the
    messages it sent, and ACK arrival."""
    first_store = {}
    doorbell = {}
    pending = None
    for e in evs:
        ev = e["ev"]
        if ev == "exanet_pkt_payload":
            first_store.setdefault((e["iface"], e["chan"]), e["t"])
        elif ev == "exanet_doorbell":
            doorbell[(e["iface"], e["chan"])] = e["t"]
        elif ev == "exanet_tx":
            ic = (e["iface"], e["chan"])
            key = (e["node"], e["iface"], e["chan"], e["seq"])
            m = msgs.setdefault(key, {})
            m.update(payload=first_store.pop(ic, None), doorbell=doorbell.get(ic),
                     tx=e["t"], dst=e["dst"], retransmits=0)
            pending = (key, e["dst"])
        elif ev == "fabric_qemu_doorbell" and pending and e["dst"] == pending[1]:
            msgs[pending[0]]["doorbell_sent"] = e["t"]
        elif ev == "fabric_nic_send" and pending and e["type"] == EXA_PKT_DATA \
                and e["dst"] == pending[1]:
            msgs[pending[0]]["send"] = e["t"]
            pending = None
        elif ev == "exanet_retransmit":
            key = (e["node"], e["iface"], e["chan"], e["seq"])
            if key in msgs:
                msgs[key]["retransmits"] += 1
        elif ev in ("exanet_ack", "exanet_nack"):
            # the answer names our own channel and sequence number
            key = (e["node"], e["iface"], e["chan"], e["seq"])
            if key in msgs:
                msgs[key]["ack" if ev == "exanet_ack" else "nack"] = e["t"]


def _receiver_side(evs, msgs):
    """Walk one node's events: wake-up, dispatch, DMA, notification of the
    messages it received, and the next payload store after each."""
    last_wake = {}          # tid -> t
    last_rx = None
    cur = None
    waiting_seen = []
    for e in evs:
        ev = e["ev"]
        if ev == "fabric_qemu_rx_wake":
            last_wake[e["tid"]] = e["t"]
        elif ev == "fabric_qemu_rx" and e["type"] == EXA_PKT_DATA:
            last_rx = e
        elif ev == "exanet_rx":
            key = (e["src"], e["iface"], e["chan"], e["seq"])
            m = msgs.get(key)
            cur = None
            if m is None or "rx" in m:
                continue        # unknown sender side, or a duplicate
            m["rx"] = e["t"]
            if last_rx and last_rx["src"] == e["src"] and last_rx["tid"] == e["tid"]:
                m["dispatch"] = last_rx["t"]
                m["ctx"] = last_rx["ctx"]
                w = last_wake.get(e["tid"])
                # only a wake-up of the thread that handled it, after the send
                if last_rx["ctx"] == "thread" and w is not None and \
                        m.get("tx") is not None and w >= m["tx"]:
                    m["wake"] = w
                else:
                    m["wake"] = last_rx["t"]
            cur = m
        elif ev == "exanet_mbox_write" and cur is not None:
            cur["dma"] = e["t"]
        elif ev == "exanet_mbox_notify" and cur is not None:
            cur["notify"] = e["t"]
            waiting_seen.append(cur)
            cur = None
        elif ev == "exanet_irq":
            # the interrupt a notification raised (the source was armed)
            for m in waiting_seen:
                m.setdefault("irq", e["t"])
        elif ev == "exanet_ctrl_write" and e["off"] == EXA_REG_IRQ_MBOX_PENDING:
            for m in waiting_seen:
                if "irq" in m:
                    m.setdefault("handler", e["t"])
        elif ev == "exanet_pkt_payload" and waiting_seen:
            for m in waiting_seen:
                m["seen"] = e["t"]
            waiting_seen = []


def messages(events_by_node):
    """One-way messages of all nodes: dict key (src node, iface, chan, seq)
    -> dict of timestamps (payload, doorbell, tx, send, wake, dispatch, rx,
    dma, notify, seen, ack) plus ctx, dst, retransmits."""
    msgs = {}
    for evs in events_by_node:
        _sender_side(evs, msgs)
    for evs in events_by_node:
        _receiver_side(evs, msgs)
    return msgs


def quantile(xs, q):
    """Linear interpolation between the closest ranks (the median of an
    even count is the mean of the middle two)."""
    if not xs:
        return None
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(xs):
    if not xs:
        return {"samples": 0, "median_us": None, "p99_us": None, "mean_us": None}
    return {"samples": len(xs), "median_us": round(quantile(xs, 0.5), 2),
            "p99_us": round(quantile(xs, 0.99), 2), "mean_us": round(sum(xs) / len(xs), 2)}


def stage_stats(items, stages):
    """summary() of every stage (name, start, end, description): end minus
    start over the items that have both timestamps."""
    res = []
    for name, a, b, desc in stages:
        st = summary([x[b] - x[a] for x in items if a in x and b in x])
        st.update(name=name, start=a, end=b, description=desc)
        res.append(st)
    return res


def _complete(msgs):
    """The messages with every timestamp of STAGES and no retransmission,
    in sending order."""
    need = ["payload", "doorbell", "tx", "send", "wake", "dispatch", "dma", "notify", "seen"]
    return sorted((m for m in msgs.values() if all(m.get(k) is not None for k in need)
                   and not m.get("retransmits")), key=lambda m: m["payload"])


def breakdown(msgs, skip=0):
    """Stage statistics over the complete messages (all timestamps present,
    no retransmission), in sending order, the first `skip` left out."""
    done = _complete(msgs)
    used = done[skip:]
    stages = stage_stats(used, STAGES)
    total = summary([m["seen"] - m["payload"] for m in used])
    ack = summary([m["ack"] - m["tx"] for m in used if m.get("ack") is not None])
    # The send() can return after the receiver has handled the packet: on
    # this host the receiving fabric thread may preempt the sender.
    send = summary([m["send"] - m["tx"] for m in used])
    early = sum(1 for m in used if m["send"] > m["dispatch"])
    ctx = {}
    for m in used:
        ctx[m.get("ctx", "?")] = ctx.get(m.get("ctx", "?"), 0) + 1
    return {
        "messages_traced": len(msgs),
        "messages_complete": len(done),
        "messages_used": len(used),
        "retransmitted": sum(1 for m in msgs.values() if m.get("retransmits")),
        "stages": stages,
        "total": total,
        "ack_round_trip": ack,
        "send_syscall": send,
        "send_returned_after_receive": early,
        "receive_context": ctx,
    }


def sleep_breakdown(msgs, skip=0):
    """Stage statistics (SLEEP_STAGES) of the complete messages whose
    notification raised an interrupt, in sending order, the first `skip`
    left out; the others were found by a look at the mailbox before the
    receiver slept (or its interrupt was not armed) and are only counted."""
    done = _complete(msgs)
    used = done[skip:]
    slept = [m for m in used if m.get("irq") is not None and
             m.get("handler") is not None and m["handler"] <= m["seen"]]
    return {
        "messages_traced": len(msgs),
        "messages_complete": len(done),
        "messages_used": len(slept),
        "messages_without_interrupt": len(used) - len(slept),
        # the receiver's rings were armed (it slept): a doorbell datagram
        "doorbells": sum(1 for m in slept if m.get("doorbell_sent") is not None),
        "stages": stage_stats(slept, SLEEP_STAGES),
        "total": summary([m["seen"] - m["payload"] for m in slept]),
    }


def table(bd):
    rows = ["%-14s %9s %9s %9s  %s" % ("stage", "median", "p99", "mean", "what")]
    for s in bd["stages"] + [dict(bd["total"], name="one-way total",
                                  description="payload store on A to next payload store on B")]:
        rows.append("%-14s %9s %9s %9s  %s" % (
            s["name"], fmt_us(s["median_us"]), fmt_us(s["p99_us"]), fmt_us(s["mean_us"]),
            s["description"]))
    return "\n".join(rows)


def fmt_us(v):
    return "-" if v is None else "%.1f" % v


# ------------------------------------------------------------ RDMA and RMA
#
# One transfer at a time (a ping-pong, or a read / get waited for before
# the next): every step is the first matching event at or after the
# previous step, on the initiator (A) or the target (B).  A step is
# (name, side, event, predicate(event, start event)).

RD_BLOCK, RD_RREQ = 16, 18          # qemu-devices/exanet/exanet-rdma-int.h
EXT_K_PUT, EXT_K_GETREQ, EXT_K_GETRSP = 2, 5, 6   # qemu-devices/extoll/extoll-int.h
RMA2_BT_GET, RMA2_BT_PUT = 0, 2     # lib/librma2/include/rma2.h (command)


def _from_a(typ=None, key="type"):
    return lambda e, s: e.get("src") == s["node"] and (typ is None or e[key] == typ)


def _to_a(typ=None, key="type"):
    return lambda e, s: e.get("dst") == s["node"] and (typ is None or e[key] == typ)


def _to_b(typ=None, key="type"):
    return lambda e, s: e.get("dst") == s["dst"] and (typ is None or e[key] == typ)


def _from_b(typ=None, key="type"):
    return lambda e, s: e.get("src") == s["dst"] and (typ is None or e[key] == typ)


def _any(e, s):
    return True


ENGINES = {
    # ExaNet RDMA write with a notification at the target (exanet-rdma-lat)
    "rdma_write": {
        "start": ("exanet_rdma_trigger", lambda e: e["chan"] < 32),
        "steps": [
            ("sent", "A", "exanet_rdma_send", _to_b(RD_BLOCK)),
            ("taken", "B", "fabric_qemu_bulk_rx", _from_a(RD_BLOCK)),
            ("written", "B", "exanet_rdma_notify", _any),
            ("seen", "B", "exanet_rdma_notifs_poll", _any),
        ],
        "stages": [
            ("device_tx", "trigger", "sent",
             "initiator NI: trigger store to the block in the ring (descriptor checks, "
             "source DMA, header)"),
            ("fabric", "sent", "taken",
             "ring until the target takes the block (its polling vCPU, or its fabric thread)"),
            ("target_dma", "taken", "written",
             "target NI: block checks, data DMA, notification record"),
            ("seen", "written", "seen",
             "the target's notification poll (NOTIFS read) returns"),
        ],
    },
    # ExaNet RDMA read, completion record at the initiator
    "rdma_read": {
        "start": ("exanet_rdma_trigger", lambda e: e["chan"] >= 32),
        "steps": [
            ("request_sent", "A", "exanet_rdma_send", _to_b(RD_RREQ)),
            ("request_taken", "B", "fabric_qemu_bulk_rx", _from_a(RD_RREQ)),
            ("answer_sent", "B", "exanet_rdma_send", _to_a(RD_BLOCK)),
            ("answer_taken", "A", "fabric_qemu_bulk_rx", _from_b(RD_BLOCK)),
            ("written", "A", "exanet_rdma_notify", _any),
            ("seen", "A", "exanet_rdma_notifs_poll", _any),
        ],
        "stages": [
            ("device_tx", "trigger", "request_sent", "initiator NI: trigger to request sent"),
            ("fabric_request", "request_sent", "request_taken",
             "ring until the responder takes the request (the target's fabric thread "
             "wakes up unless its vCPU polls)"),
            ("responder", "request_taken", "answer_sent",
             "responder NI: checks, source DMA, answer block"),
            ("fabric_answer", "answer_sent", "answer_taken", "ring until the initiator takes it"),
            ("local_dma", "answer_taken", "written", "data DMA and completion record"),
            ("seen", "written", "seen", "the initiator's poll (NOTIFS read) returns"),
        ],
    },
    # EXTOLL RMA put with a completer notification (rma2-pingpong --noti)
    "rma_put": {
        "start": ("extoll_rma_cmd", lambda e: e["cmd"] == RMA2_BT_PUT),
        "steps": [
            ("sent", "A", "extoll_tx", _to_b(EXT_K_PUT, "kind")),
            ("taken", "B", "extoll_rx", _from_a(EXT_K_PUT, "kind")),
            ("written", "B", "extoll_noti_write", _any),
            ("seen", "B", "extoll_rma_noti_poll", _any),
        ],
        "stages": [
            ("device_tx", "trigger", "sent",
             "requester NI: command (third word) to the packet sent"),
            ("fabric", "sent", "taken", "until the target NI handles the packet"),
            ("target_dma", "taken", "written", "target NI: data DMA, notification"),
            ("seen", "written", "seen", "the target's notification poll (NOTI_COUNT) returns"),
        ],
    },
    # EXTOLL RMA get, requester notification (rma2-pingpong --get)
    "rma_get": {
        "start": ("extoll_rma_cmd", lambda e: e["cmd"] == RMA2_BT_GET),
        "steps": [
            ("request_sent", "A", "extoll_tx", _to_b(EXT_K_GETREQ, "kind")),
            ("request_taken", "B", "extoll_rx", _from_a(EXT_K_GETREQ, "kind")),
            ("answer_sent", "B", "extoll_tx", _to_a(EXT_K_GETRSP, "kind")),
            ("answer_taken", "A", "extoll_rx", _from_b(EXT_K_GETRSP, "kind")),
            ("written", "A", "extoll_noti_write", _any),
            ("seen", "A", "extoll_rma_noti_poll", _any),
        ],
        "stages": [
            ("device_tx", "trigger", "request_sent", "requester NI: command to request sent"),
            ("fabric_request", "request_sent", "request_taken",
             "until the responder NI handles the request"),
            ("responder", "request_taken", "answer_sent", "responder NI: source DMA, answer"),
            ("fabric_answer", "answer_sent", "answer_taken", "until the requester handles it"),
            ("local_dma", "answer_taken", "written", "data DMA and notification"),
            ("seen", "written", "seen", "the requester's poll (NOTI_COUNT) returns"),
        ],
    },
}

ENGINE_EVENTS = {
    "rdma_write": ["exanet_rdma_trigger", "exanet_rdma_send", "fabric_qemu_bulk_rx",
                   "exanet_rdma_notify", "exanet_rdma_notifs_poll"],
    "rma_put": ["extoll_rma_cmd", "extoll_tx", "extoll_rx", "extoll_noti_write",
                "extoll_rma_noti_poll"],
}
ENGINE_EVENTS["rdma_read"] = ENGINE_EVENTS["rdma_write"]
ENGINE_EVENTS["rma_get"] = ENGINE_EVENTS["rma_put"]


def engine_transfers(events_by_node, engine):
    """The transfers of one kind (ENGINES key) found in the nodes' events:
    list of dicts step name -> timestamp (us), "trigger" included;
    incomplete transfers are left out."""
    import bisect
    spec = ENGINES[engine]
    # node id -> event name -> (times, events), in time order
    index = {}
    for evs in events_by_node:
        for e in evs:
            per = index.setdefault(e["node"], {}).setdefault(e["ev"], ([], []))
            per[0].append(e["t"])
            per[1].append(e)
    for per_node in index.values():
        for ev, (ts, es) in per_node.items():
            order = sorted(range(len(ts)), key=lambda i: ts[i])
            per_node[ev] = ([ts[i] for i in order], [es[i] for i in order])
    out = []
    sev, spred = spec["start"]
    for node, per_node in index.items():
        for s in per_node.get(sev, ([], []))[1]:
            if not spred(s):
                continue
            t = s["t"]
            rec = {"trigger": t}
            for name, side, ev, pred in spec["steps"]:
                where = index.get(s["node"] if side == "A" else s["dst"], {}).get(ev)
                if not where:
                    rec = None
                    break
                ts, es = where
                i = bisect.bisect_left(ts, t)
                while i < len(es) and not pred(es[i], s):
                    i += 1
                if i == len(es):
                    rec = None
                    break
                t = ts[i]
                rec[name] = t
            if rec:
                out.append(rec)
    out.sort(key=lambda r: r["trigger"])
    return out


def engine_breakdown(transfers, engine, skip=0):
    """Stage statistics of engine_transfers() (the first `skip` left out)."""
    used = transfers[skip:]
    stages = stage_stats(used, ENGINES[engine]["stages"])
    return {"transfers_used": len(used), "stages": stages,
            "total": summary([r["seen"] - r["trigger"] for r in used])}


def engine_table(bd):
    rows = ["%-15s %9s %9s %9s  %s" % ("stage", "median", "p99", "mean", "what")]
    for s in bd["stages"] + [dict(bd["total"], name="total",
                                  description="trigger store to the poll that sees it")]:
        rows.append("%-15s %9s %9s %9s  %s" % (
            s["name"], fmt_us(s["median_us"]), fmt_us(s["p99_us"]), fmt_us(s["mean_us"]),
            s["description"]))
    return "\n".join(rows)
