#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make results: the benchmark JSONs of build/bench/ as one page of tables
and a few plots a reader can look at.

  tools/bench/results.py [--bench-dir build/bench] [--out Documentation/results.md]
                         [--plots Documentation/results]

Reads whichever of build/bench/*.json exist (keys: Documentation/testing.md,
Benchmarks), writes Documentation/results.md (headline figures per
benchmark, each with its file and, when the file records them, the commit,
date, host and emulator of the run) and PNGs into Documentation/results/
with Debian's python3-matplotlib (Agg backend; without it the page is
written and says that the plots are missing).  A benchmark without its
file gets a line saying which make target measures it.
"""
import argparse
import glob
import json
import os
import sys

# (file, make target, title, [(key path, label)]) in the order of the page.
# A key path is a tuple of keys into the JSON; rows whose key is missing
# are left out, so older files still give what they have.
BENCHMARKS = [
    ("msg.json", "bench-msg", "ExaNet messaging (packetizer and mailboxes)", [
        (("exanet_oneway_us",), "ExaNet 8 B one-way, median (us)"),
        (("exanet_p99_us",), "ExaNet 8 B one-way, p99 (us)"),
        (("udp_oneway_us",), "UDP over the management network, 8 B one-way (us)"),
        (("ratio",), "UDP / ExaNet"),
        (("loopback_oneway_us",), "two processes of one node, one-way (us)"),
        (("sleep_oneway_us",), "to a receiver asleep on the NI's interrupt, one-way (us)"),
        (("sleep_vs_busy",), "asleep / busy polling"),
        (("hop_cost_us",), "cost of an extra torus hop (us)"),
        (("hop_host_cost_us",), "host's own cost of a hop, link-ns 0 (us)"),
        (("syscalls_per_msg",), "system calls per message"),
        (("mbox_lat_8B_direct_over_rings",), "mailbox 8 B, direct delivery / rings"),
    ]),
    ("msg-direct.json", "bench-msg", "Mailbox messages: direct delivery against the rings", [
        (("mbox_lat_8B_direct_over_rings",), "8 B latency, direct / rings"),
        (("mbox_msg_rate_x_lat",), "messages in flight (rate x latency), direct"),
        (("mbox_msg_rate_x_lat_rings",), "messages in flight (rate x latency), rings"),
        (("empty_poll_mmio_reads",), "receiver's MMIO reads of TAIL per message"),
    ]),
    ("rdma.json", "bench-rdma", "ExaNet RDMA engine", [
        (("rdma_write_mb_s",), "RDMA write 4 MiB (MB/s)"),
        (("tcp_mb_s",), "TCP over the management network (MB/s)"),
        (("host_memcpy_mb_s",), "host memcpy (MB/s)"),
        (("fraction_of_memcpy",), "RDMA write / host memcpy"),
        (("rdma_lat_8B_us",), "RDMA write 8 B one-way (us)"),
        (("rdma_read_lat_8B_us",), "RDMA read 8 B completion (us)"),
        (("pkt_lat_8B_us",), "packetizer 8 B one-way (us)"),
        (("odp_warm_vs_pinned",), "on-demand paging, warm / pinned"),
        (("odp_first_touch_vs_pinned",), "on-demand paging, first touch / pinned"),
        (("link_share", "single"), "link share, one stream"),
        (("link_share", "shared_max"), "link share, two streams over one link (larger)"),
        (("link_share", "disjoint_min"), "link share, two streams over two links (smaller)"),
    ]),
    ("rdma-direct.json", "bench-rdma", "ExaNet RDMA: direct delivery against the rings", [
        (("direct", "write_lat_8B_us"), "direct: RDMA write 8 B one-way (us)"),
        (("rings", "write_lat_8B_us"), "rings: RDMA write 8 B one-way (us)"),
        (("direct", "read_lat_8B_us"), "direct: RDMA read 8 B (us)"),
        (("rings", "read_lat_8B_us"), "rings: RDMA read 8 B (us)"),
        (("direct", "write_4MiB_mb_s"), "direct: RDMA write 4 MiB (MB/s)"),
        (("rings", "write_4MiB_mb_s"), "rings: RDMA write 4 MiB (MB/s)"),
        (("host_memcpy_mb_s",), "host memcpy (MB/s)"),
        (("direct", "over_memcpy"), "direct: write / host memcpy"),
        (("rings", "over_memcpy"), "rings: write / host memcpy"),
    ]),
    ("extoll.json", "bench-extoll", "EXTOLL NIC: VELO and RMA", [
        (("velo_lat_8B_us",), "VELO 8 B one-way (us)"),
        (("rma_lat_8B_us",), "RMA put + notification 8 B one-way (us)"),
        (("velo_rma_lat_ratio_8B",), "VELO / RMA latency, 8 B"),
        (("crossover_bytes",), "size from which RMA puts out-stream VELO (bytes)"),
        (("rma_put_4MiB_mb_s",), "RMA put 4 MiB (MB/s)"),
        (("rma_put_4MiB_vs_exanet_write",), "RMA put / ExaNet RDMA write, 4 MiB"),
        (("velo_stream_4KiB_mb_s",), "VELO stream of 4 KiB messages (MB/s)"),
        (("rma_put_8B_msgs_per_s",), "8 B puts per second"),
    ]),
    ("extoll-direct.json", "bench-extoll", "EXTOLL: direct delivery against the rings", []),
    ("mpi.json", "bench-mpi", "Open MPI over the providers", [
        (("lat_8B_exa_us",), "8 B one-way over exanet (us)"),
        (("lat_8B_tcp_us",), "8 B one-way over TCP (us)"),
        (("lat_ratio",), "TCP / exanet latency"),
        (("raw_8B_us",), "raw NI 8 B one-way (us)"),
        (("mpi_over_raw_lat",), "MPI / raw NI latency"),
        (("bw_4MiB_exa_mb_s",), "4 MiB streaming over exanet (MB/s)"),
        (("bw_4MiB_tcp_mb_s",), "4 MiB streaming over TCP (MB/s)"),
        (("allreduce_8B_4n_exa_us",), "MPI_Allreduce 8 B, 4 nodes, exanet (us)"),
        (("allreduce_8B_4n_tcp_us",), "MPI_Allreduce 8 B, 4 nodes, TCP (us)"),
        (("extoll_2n", "lat_8B_extoll", "median"), "8 B one-way over extoll (us)"),
        (("extoll_mpi_over_velo_lat",), "MPI over extoll / raw VELO latency"),
    ]),
    ("mpi-fast-send.json", "bench-mpi", "Open MPI: the providers' fast send on and off", [
        (("fast_send", "exa", "on", "lat_8B_us"), "exanet, fast send on: 8 B one-way (us)"),
        (("fast_send", "exa", "off", "lat_8B_us"), "exanet, fast send off: 8 B one-way (us)"),
        (("fast_send", "exa", "rate_on_over_off"), "exanet: message rate on / off"),
        (("fast_send", "extoll", "on", "lat_8B_us"), "extoll, fast send on: 8 B one-way (us)"),
        (("fast_send", "extoll", "off", "lat_8B_us"), "extoll, fast send off: 8 B one-way (us)"),
        (("fast_send", "extoll", "rate_on_over_off"), "extoll: message rate on / off"),
    ]),
    ("ip.json", "bench-ip", "IP over the fabric (exanet-ipd, exa0)", [
        (("tcp_exa_mbps",), "TCP over exa0 (Mb/s)"),
        (("tcp_eth_mbps",), "TCP over eth0 (Mb/s)"),
        (("tcp_ratio",), "exa0 / eth0, TCP"),
        (("udp_exa_mbps",), "UDP over exa0 (Mb/s)"),
        (("udp_eth_mbps",), "UDP over eth0 (Mb/s)"),
        (("rtt_eth_us",), "ping RTT over eth0 (us)"),
        (("busy", "rtt_us"), "ping RTT over exa0, busy mode (us)"),
        (("irq", "rtt_us"), "ping RTT over exa0, irq mode (us)"),
        (("irq", "idle_cpu_pct"), "daemon's idle CPU, irq mode (% of a core)"),
    ]),
    ("ip-breakdown.json", "bench-ip-breakdown", "Where a 64 B UDP packet's time goes over exa0", []),
    ("latency-breakdown.json", "bench-latency", "Where an 8 B message's time goes", [
        (("pingpong_oneway_us",), "untraced one-way (us)"),
        (("pingpong_traced_oneway_us",), "traced one-way (us)"),
        (("sleep", "pingpong_oneway_us"), "to a sleeping receiver, untraced one-way (us)"),
        (("engines", "rdma_write", "tool_median_us"), "RDMA write, traced (us)"),
        (("engines", "rdma_read", "tool_median_us"), "RDMA read, traced (us)"),
        (("engines", "rma_put", "tool_median_us"), "RMA put, traced (us)"),
        (("engines", "rma_get", "tool_median_us"), "RMA get, traced (us)"),
    ]),
    ("evb.json", "bench-evb", "Event building (exanet-evb)", []),
    ("agent.json", "bench-agent", "Command channel (qemu-guest-agent)", [
        (("one client", "median_ms"), "one client: latency median (ms)"),
        (("one client", "p99_ms"), "one client: latency p99 (ms)"),
        (("one client", "commands_per_s"), "one client: commands per second"),
        (("two clients", "commands_per_s"), "two clients: commands per second"),
        (("one client", "lost"), "one client: lost"),
        (("two clients", "lost"), "two clients: lost"),
    ]),
    ("faults.json", "check-faults", "Fault campaign of the torus", [
        (("messages",), "packetizer messages"),
        (("rdma_blocks",), "RDMA blocks"),
        (("lost",), "lost"),
        (("duplicated",), "duplicated"),
        (("corrupted",), "corrupted"),
        (("reported_failed",), "reported failed"),
        (("link_down_events",), "link-down periods"),
        (("injected_drops",), "injected drops"),
        (("injected_corruptions",), "injected bit flips"),
        (("detoured",), "packets detoured"),
        (("nodes",), "nodes"),
        (("torus",), "torus"),
        (("seconds",), "seconds"),
    ]),
    ("debug.json", "check-debug", "The suite on the debug kernel", []),
]
RUN_KEYS = ("commit", "date", "host", "emulator")
# written by an option of a benchmark (--direct-only, --fast-send-only):
# their absence is not worth a line
SIDE_FILES = {"msg-direct.json", "rdma-direct.json", "extoll-direct.json", "mpi-fast-send.json"}
# files of a run that only hold the raw rounds of another file's figures
RAW_SUFFIX = "-runs.json"


# files written before the keys became snake_case (MBps -> mb_s, Mbps -> mbps)
LEGACY_SUFFIXES = (("_mb_s", "_MBps"), ("_mbps", "_Mbps"))


def get(data, path):
    for key in path:
        if isinstance(data, dict) and key not in data:
            key = next((key[:-len(new)] + old for new, old in LEGACY_SUFFIXES
                        if key.endswith(new) and key[:-len(new)] + old in data), key)
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == int(value) and abs(value) >= 1000:
            return "{:,}".format(int(value))
        return "%.3g" % value if abs(value) < 100 else "{:,.0f}".format(value)
    if isinstance(value, int):
        return "{:,}".format(value)
    if isinstance(value, dict):
        return ", ".join("%s %s" % (k, fmt(v)) for k, v in value.items())
    return str(value)


def scalar_rows(data, prefix=(), depth=2):
    """Every scalar of data down to depth levels, for files without a
    chosen list of headline keys (definitions and raw runs left out)."""
    rows = []
    for key, value in data.items():
        path = prefix + (key,)
        if isinstance(value, dict) and depth > 1:
            rows += scalar_rows(value, path, depth - 1)
        elif isinstance(value, (int, float, bool)) or (
                isinstance(value, str) and len(value) <= 40 and "definition" not in key):
            rows.append((path, ".".join(path)))
    return rows


def run_line(data):
    found = [(k, data[k]) for k in RUN_KEYS if data.get(k) not in (None, "")]
    if not found:
        return "run: commit, date and host not recorded in the file"
    return "run: " + "; ".join("%s %s" % (k, fmt(v)) for k, v in found)


def section(name, target, title, rows, data):
    out = ["## %s" % title, "",
           "`build/bench/%s` (`make %s`); %s." % (name, target, run_line(data)), ""]
    rows = rows or scalar_rows({k: v for k, v in data.items() if k not in RUN_KEYS})
    rows = [(label, get(data, path)) for path, label in rows if get(data, path) is not None]
    if rows:
        out += ["| figure | value |", "|---|---|"]
        out += ["| %s | %s |" % (label, fmt(value)) for label, value in rows[:40]]
        out.append("")
    definition = data.get("definition") or data.get("lat_definition")
    if isinstance(definition, str):
        out += ["How: %s." % definition.rstrip("."), ""]
    return out


# ---- plots ---------------------------------------------------------------

def series(data, path):
    """{size: value} of a by-size dict (keys are byte counts)."""
    d = get(data, path)
    if not isinstance(d, dict):
        return {}
    try:
        return {int(k): v for k, v in d.items() if isinstance(v, (int, float))}
    except ValueError:
        return {}


def size_label(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def size_plot(plt, curves, ylabel, title, path, limit=None):
    """One log-log plot of {label: {size: value}} (at least one point)."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for label, points in curves:
        sizes = sorted(s for s in points if s > 0)
        ax.plot(sizes, [points[s] for s in sizes], marker="o", markersize=3, label=label)
    if limit:
        ax.axhline(limit[1], color="grey", linestyle="--", linewidth=1, label=limit[0])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = sorted({s for _, p in curves for s in p if s > 0})
    ax.set_xticks(ticks[::max(1, len(ticks) // 8)])
    ax.set_xticklabels([size_label(s) for s in ticks[::max(1, len(ticks) // 8)]], fontsize=7)
    ax.set_xlabel("message size")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", linewidth=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)


def bar_panels(plt, panels, title, path):
    """Side by side panels of bars: [(ylabel, {bar label: value})]."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4))
    for ax, (ylabel, bars) in zip(axes, panels):
        ax.bar(range(len(bars)), list(bars.values()),
               color=["C%d" % i for i in range(len(bars))])
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels(list(bars), fontsize=7, rotation=20)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, axis="y", linewidth=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)


def plots(found, plot_dir, md_dir):
    """Write the plots the data allows; return the page's lines about them."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["No plots: python3-matplotlib is missing (`make deps` installs it).", ""]
    os.makedirs(plot_dir, exist_ok=True)
    for old in glob.glob(os.path.join(plot_dir, "*.png")):
        os.remove(old)
    mpi, extoll, msg = found.get("mpi.json", {}), found.get("extoll.json", {}), found.get("msg.json", {})
    rdma, rdma_direct = found.get("rdma.json", {}), found.get("rdma-direct.json", {})
    written = []

    def rel(name):
        return os.path.relpath(os.path.join(plot_dir, name), md_dir)

    lat = [(lab, s) for lab, s in (
        ("Open MPI over exanet", series(mpi, ("lat_us", "exa"))),
        ("Open MPI over TCP", series(mpi, ("lat_us", "tcp"))),
        ("EXTOLL VELO", series(extoll, ("velo_lat_us",))),
        ("EXTOLL RMA put + notification", series(extoll, ("rma_lat_us",)))) if len(s) > 1]
    if lat:
        size_plot(plt, lat, "one-way latency (us)", "Latency by message size",
                  os.path.join(plot_dir, "latency-by-size.png"))
        written.append(("latency-by-size.png", "latency by message size"))

    memcpy = get(rdma, ("host_memcpy_mb_s",)) or get(rdma_direct, ("host_memcpy_mb_s",))
    bw = [(lab, s) for lab, s in (
        ("Open MPI over exanet", series(mpi, ("stream", "exa", "bw_mb_s"))),
        ("Open MPI over TCP", series(mpi, ("stream", "tcp", "bw_mb_s"))),
        ("EXTOLL VELO stream", series(extoll, ("velo_bw_mb_s",))),
        ("EXTOLL RMA puts", series(extoll, ("rma_bw_mb_s",)))) if len(s) > 1]
    if bw:
        size_plot(plt, bw, "MB/s", "Bandwidth by message size",
                  os.path.join(plot_dir, "bandwidth-by-size.png"),
                  ("host memcpy", memcpy) if memcpy else None)
        written.append(("bandwidth-by-size.png",
                        "bandwidth by message size, host memcpy as the limit"))

    hops = [(lab, s) for lab, s in (
        ("default hop latency (link-ns)", series(msg, ("hops_us",))),
        ("link-ns 0: the host's own cost", series(msg, ("hops_us_link_ns_0",)))) if s]
    if hops:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for lab, s in hops:
            ax.plot(sorted(s), [s[h] for h in sorted(s)], marker="o", label=lab)
        ax.set_xticks(sorted({h for _, s in hops for h in s}))
        ax.set_xlabel("hops (8-node 2x2x2 torus)")
        ax.set_ylabel("8 B one-way (us)")
        ax.set_title("Latency by hop count", fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(True, linewidth=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(plot_dir, "hops.png"), dpi=80, metadata={"Software": None})
        plt.close(fig)
        written.append(("hops.png", "latency by hop count"))

    d = rdma_direct
    if isinstance(d.get("direct"), dict) and isinstance(d.get("rings"), dict):
        panels = [("RDMA write 8 B one-way (us)", {}), ("RDMA read 8 B (us)", {}),
                  ("RDMA write 4 MiB (MB/s)", {})]
        for (ylabel, bars), key in zip(panels, ("write_lat_8B_us", "read_lat_8B_us",
                                                 "write_4MiB_mb_s")):
            bars["direct"] = get(d, ("direct", key)) or 0
            bars["rings"] = get(d, ("rings", key)) or 0
        if get(d, ("host_memcpy_mb_s",)):
            panels[2][1]["host memcpy"] = get(d, ("host_memcpy_mb_s",))
        bar_panels(plt, panels, "ExaNet RDMA: direct delivery against the rings",
                   os.path.join(plot_dir, "rdma-direct.png"))
        written.append(("rdma-direct.png", "ExaNet RDMA with direct delivery against the rings"))

    if not written:
        return ["No plots: none of the files has a series to draw.", ""]
    out = ["## Plots", ""]
    for png, what in written:
        out += ["![%s](%s)" % (what, rel(png)), ""]
    missing = [what for what, ok in (
        ("latency by message size (`make bench-mpi`, `make bench-extoll`)", lat),
        ("bandwidth by message size (`make bench-mpi`, `make bench-extoll`)", bw),
        ("latency by hop count (`make bench-msg`)", hops)) if not ok]
    if missing:
        out += ["Not drawn for lack of data: %s." % "; ".join(missing), ""]
    return out


def main():
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-dir", default=os.path.join(top, "build", "bench"))
    ap.add_argument("--out", default=os.path.join(top, "Documentation", "results.md"))
    ap.add_argument("--plots", default=os.path.join(top, "Documentation", "results"))
    args = ap.parse_args()
    try:
        import matplotlib   # noqa: F401 (only: is it there?)
    except ImportError:
        # Debian's python3-matplotlib is in /usr/bin/python3's path, not in
        # a virtualenv's or pyenv's: let that interpreter write the page
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])

    found = {}
    for path in sorted(glob.glob(os.path.join(args.bench_dir, "*.json"))):
        if path.endswith(RAW_SUFFIX):
            continue
        try:
            with open(path) as f:
                found[os.path.basename(path)] = json.load(f)
        except (OSError, ValueError) as e:
            print("results: %s skipped: %s" % (path, e), file=sys.stderr)

    out = ["# Results", "",
           "Generated by `make results` (`tools/bench/results.py`) from the benchmark",
           "files of `build/bench/`; do not edit by hand.  The figures come from",
           "emulated nodes (QEMU, TCG) on a shared host: compare figures of one run",
           "with each other, not across runs or with hardware.  What each benchmark",
           "measures and every key of its file: `Documentation/testing.md`",
           "(Benchmarks).", ""]
    known = {b[0] for b in BENCHMARKS}
    missing = []
    for name, target, title, rows in BENCHMARKS:
        if name in found:
            out += section(name, target, title, rows, found[name])
        elif name not in SIDE_FILES:
            missing.append((title, target))
    for name in sorted(set(found) - known):
        out += section(name, "bench-*", name, [], found[name])
    out += plots(found, args.plots, os.path.dirname(os.path.abspath(args.out)))
    if missing:
        out += ["## Not measured", ""]
        out += ["- %s: not measured: run `make %s`" % m for m in missing]
        out.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(out).rstrip("\n") + "\n")
    print("results: %s from %d file(s) of %s" % (args.out, len(found), args.bench_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
