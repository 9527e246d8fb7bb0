#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit test of tools/cluster/run-tests' TAP parsing and verdicts (TAP)."""
import importlib.machinery
import importlib.util
import io
import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
RT = os.path.join(TOP, "tools", "cluster", "run-tests")
sys.path.insert(0, os.path.dirname(RT))
loader = importlib.machinery.SourceFileLoader("run_tests", RT)
spec = importlib.util.spec_from_loader("run_tests", loader)
rt = importlib.util.module_from_spec(spec)
loader.exec_module(rt)

from taplib import check, report  # noqa: E402  (tools/cluster/taplib.py)


def verdict(outputs, rcs=None, timed_out=None):
    runs = []
    for i, o in enumerate(outputs):
        runs.append({"node": i, "rc": (rcs or [0] * len(outputs))[i], "output": o,
                     "timed_out": (timed_out or [False] * len(outputs))[i],
                     "timeout": 5, "error": None})
    res = rt.Results()
    with contextlib.redirect_stdout(io.StringIO()):
        ok = rt.judge(res, "t", "p", runs)
    return ok, res


# as linux-6.1's kselftest_harness.h prints it (skip lines carry no name)
KSFT = """TAP version 13
1..4
# Starting 4 tests from 1 test cases.
#  RUN           a.one ...
#            OK  a.one
ok 1 a.one
#  RUN           a.two ...
#            OK  a.two
ok 2 # SKIP no device
#  RUN           a.three ...
#          FAIL  a.three
not ok 3 a.three
#  RUN           a.four ...
#            OK  a.four
ok 4 a.four # SKIP no link
# FAILED: 1 / 4 tests passed.
"""
t = rt.Tap(KSFT)
check("plan parsed", t.plan == 4)
check("pass/skip/fail parsed",
      [t.cases[n][0] for n in (1, 2, 3, 4)] == ["pass", "skip", "fail", "skip"])
check("names parsed", t.cases[1][1] == "a.one" and t.cases[3][1] == "a.three")
check("nameless skip named after its RUN line", t.cases[2][1] == "a.two")
check("skip reason", t.cases[2][2] == "no device" and t.cases[4][2] == "no link")
check("named skip keeps its name", t.cases[4][1] == "a.four")
check("no RUN line, no name", rt.Tap("1..1\nok 1 # SKIP x\n").cases[1][1] == "")
check("nested lines ignored", rt.Tap("1..1\n    ok 1 sub\nok 1 top\n").cases[1][1] == "top")
check("dash separator", rt.Tap("ok 1 - foo\n").cases[1][1] == "foo")
check("TODO failure passes", rt.Tap("not ok 1 x # TODO later\n").cases[1][0] == "pass")
check("plan skip", rt.Tap("1..0 # SKIP no hw\n").plan_skip == "no hw")
check("missing cases", rt.Tap("1..3\nok 1 a\n").missing() == [2, 3])

ok, r = verdict(["1..2\nok 1 a\nok 2 b\n", "1..2\nok 1 a\nok 2 b\n"])
check("all pass on 2 nodes", ok and (r.passed, r.failed) == (2, 0))
ok, r = verdict(["1..2\nok 1 a\nok 2 b\n", "1..2\nok 1 a\nnot ok 2 b\n"], rcs=[0, 1])
check("fail on one node fails the case", not ok and (r.passed, r.failed) == (1, 1))
ok, r = verdict(["1..2\nok 1 a\nok 2 b # SKIP x\n", "1..2\nok 1 a\nok 2 b\n"])
check("skip + pass counts as pass", ok and (r.passed, r.skipped) == (2, 0))
ok, r = verdict(["1..1\nok 1 a # SKIP x\n", "1..1\nok 1 a # SKIP y\n"])
check("skipped everywhere is a skip", ok and r.skipped == 1)
ok, r = verdict(["1..3\nok 1 a\n"], rcs=[139])
check("crash fails all cases + program", not ok and (r.passed, r.failed) == (0, 4))
ok, r = verdict(["1..1\n"], rcs=[124], timed_out=[True])
check("timeout fails case + program", not ok and r.failed == 2)
ok, r = verdict(["1..2\nok 1 a\n"], rcs=[0])
check("missing case without crash fails", not ok and (r.passed, r.failed) == (1, 1))
ok, r = verdict(["hello\n"], rcs=[0])
check("no TAP, rc 0: one pass", ok and r.passed == 1)
ok, r = verdict(["hello\n"], rcs=[3])
check("no TAP, rc 3: one failure", not ok and r.failed == 1)
ok, r = verdict(["1..0 # SKIP nothing\n"], rcs=[4])
check("whole program skipped (rc 4)", ok and r.skipped == 1)
ok, r = verdict(["1..1\nok 1 a\nBail out! broken\n"], rcs=[1])
check("bail out fails", not ok)
check("summary line", rt.Results().summary() == "0 passed, 0 failed")
r = rt.Results()
r.skipped = 2
check("summary with skips", r.summary() == "0 passed, 0 failed, 2 skipped")

# checker reports (debug kernels): the first line of each report counts once
c = {}
rt.count_checkers("\n".join([
    "[  1.0] BUG: KASAN: slab-use-after-free in exanet_release+0x1/0x2 [exanet]",
    "[  1.1] BUG: KFENCE: out-of-bounds read in foo",
    "[  2.0] UBSAN: shift-out-of-bounds in drivers/exanet/exanet_main.c:12:3",
    "[  3.0] WARNING: possible circular locking dependency detected",
    "[  4.0] WARNING: CPU: 0 PID: 1 at drivers/exanet/exanet_main.c:9 f+0x1/0x2 [exanet]",
    "[  5.0] DMA-API: exanet 0000:00:03.0: device driver frees DMA memory with wrong function",
    "[  6.0] BUG kmalloc-64 (Not tainted): Poison overwritten",
    "[  7.0] BUG: sleeping function called from invalid context at mm/slab.h:1",
    "[  8.0] exa-test: begin exanet_basic 1234",
]), c)
check("checker counts", c == {"kasan_reports": 2, "ubsan_reports": 1, "lockdep_reports": 1,
                              "warn_reports": 1, "dma_api_reports": 1, "slab_reports": 1,
                              "bug_reports": 1})
check("checker patterns are all in KERNEL_BAD",
      all(__import__("re").search(rt.KERNEL_BAD, x) for x in [
          "BUG: KFENCE: use-after-free", "DMA-API: device driver frees",
          "BUG kmalloc-64 (Not tainted): Poison overwritten",
          "pagealloc: memory corruption"]))
r = rt.Results()
r.count("# injected_failures 3\nok 1 a\n# injected_failures 4\n# fuzz_iterations 10\n"
        "# injected_failures x\n")
check("counter lines are summed", r.counters == {"injected_failures": 7, "fuzz_iterations": 10})
check("kmemleak: ours by module name or module address",
      bool(rt.OUR_MODULES.search("    [<ffffffffc0123456>] exanet_open+0x5/0x9 [exanet]")) and
      bool(rt.OUR_MODULES.search("    [<ffffffffc0123456>] 0xffffffffc0123456")) and
      not rt.OUR_MODULES.search("    [<ffffffff81234567>] kmalloc_trace+0x26/0x90"))

sys.exit(report())
