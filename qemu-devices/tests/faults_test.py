#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The fault campaign of the torus in make check (TAP; run by
run-faults-vm-tests.sh): tools/bench/fault-campaign (make check-faults) on
its 8-node 2x2x2 cluster, about a minute, and its figures as checks:
>= 10^6 messages + RDMA blocks, nothing lost, duplicated or corrupted,
every reported failure a message that really was not delivered, >= 100
link-down periods, faults really injected."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD") or os.path.join(TOP, "build")
sys.path.insert(0, os.path.join(TOP, "tools", "cluster"))
from taplib import check, report  # noqa: E402


def main():
    out = os.path.join(BUILD, "bench", "faults.json")
    try:
        os.unlink(out)
    except OSError:
        pass
    p = subprocess.run([os.path.join(TOP, "tools", "bench", "fault-campaign"), "--out", out],
                       capture_output=True, text=True, timeout=3600)
    tail = (p.stdout + p.stderr)[-2000:]
    try:
        with open(out) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        check("fault campaign ran and wrote faults.json", False, "%s\n%s" % (e, tail))
        return report()
    check("every node ran its part (%s)" % r["seconds"], not r["problems"], r["problems"])
    check("messages + RDMA blocks >= 10^6 (%d + %d)" % (r["messages"], r["rdma_blocks"]),
          r["messages"] + r["rdma_blocks"] >= 1000000, tail)
    for k in ("lost", "duplicated", "corrupted", "failed_but_delivered"):
        check("%s = 0 (%d)" % (k, r[k]), r[k] == 0, tail)
    check(">= 100 link-down periods (%d)" % r["link_down_events"], r["link_down_events"] >= 100,
          tail)
    check("drops and bit flips were injected on the links (%d, %d)"
          % (r["injected_drops"], r["injected_corruptions"]),
          r["injected_drops"] > 0 and r["injected_corruptions"] > 0, tail)
    check("campaign verdict (exit status 0)", p.returncode == 0, tail)
    return report()


if __name__ == "__main__":
    sys.exit(main())
