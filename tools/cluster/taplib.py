# SPDX-License-Identifier: GPL-2.0
"""TAP output of the Python tests in this directory: collect checks with
check(name, ok, diag), then report() prints the plan and one line per check
(with the diagnostics of a failure) and returns the exit status.  Also the
reader of the TAP the guest programs of run-*vm-tests.sh print
(guest_results(), "taplib.py guest ...")."""

import re
import sys

results = []


def check(name, cond, diag=None):
    results.append((bool(cond), name, diag))


def report():
    print("1..%d" % len(results))
    fails = 0
    for n, (ok, name, diag) in enumerate(results, 1):
        print("%s %d %s" % ("ok" if ok else "not ok", n, name))
        if not ok:
            fails += 1
            for line in str(diag).splitlines()[:20]:
                print("# " + line)
    return 1 if fails else 0


# ------------------------------------------------------------------ guests
# A guest program of run-*vm-tests.sh (kselftest_harness.h, devtest_main.h)
# prints TAP on the VM's console, among the kernel's and the init script's
# lines: "1..N", "#  RUN fixture.case ...", its diagnostics, "ok N name"
# (a skip: "ok N # SKIP reason", named by its RUN line), and, from the
# init script, "VMTEST-EXIT: status".
GUEST_RUN_RE = re.compile(r"^#\s+RUN\s+(\S+)\s+\.\.\.$")
GUEST_RESULT_RE = re.compile(r"^(ok|not ok) (\d+)\s*(.*)$")
GUEST_SKIP_RE = re.compile(r"#\s*SKIP\b:?\s*(.*)$", re.I)


def guest_results(prefix, text, show=None):
    """Lines for a runner that reports the guest's cases as its own: "ok
    PREFIX: fixture.case [# SKIP reason]" or "not ok ...", unnumbered,
    with a failed case's diagnostics and the lines matching show as "# "
    comments before its result; one more "not ok" line if the program did
    not run to its end with all its cases and a status that agrees."""
    show_re = re.compile(show) if show else None
    lines = [ln.rstrip("\r") for ln in text.splitlines()]
    out, diag, fails = [], [], 0
    plan = skipped = bail = status = qemu = None
    announced = ""
    cases = 0
    for line in lines:
        m = re.match(r"^1\.\.(\d+)(.*)$", line)
        if m and plan is None:
            plan = int(m.group(1))
            d = GUEST_SKIP_RE.search(m.group(2))
            skipped = d.group(1) if d else None
            continue
        m = GUEST_RUN_RE.match(line)
        if m:
            announced, diag = m.group(1), []
            continue
        if line.startswith("Bail out!"):
            bail = line
            continue
        m = re.match(r"^VMTEST-EXIT: (\d+)", line)
        if m:
            status = int(m.group(1))
            continue
        m = re.match(r"^QEMU-EXIT: (\d+)", line)
        if m:
            qemu = int(m.group(1))
            continue
        m = GUEST_RESULT_RE.match(line)
        if m and plan is not None:
            cases += 1
            desc = m.group(3)
            d = GUEST_SKIP_RE.search(desc)
            name = (desc[:d.start()] if d else desc).strip() or announced
            ok = m.group(1) == "ok"
            shown = [x for x in diag if not ok or (show_re and show_re.search(x))]
            out += ["# " + x.lstrip("# ") for x in shown]
            res = "%s %s: %s" % (m.group(1), prefix, name)
            if d:
                res += " # SKIP " + d.group(1)
            out.append(res)
            fails += not ok
            announced, diag = "", []
            continue
        if line.startswith("#") or (show_re and show_re.search(line)):
            diag.append(line)
    why = None
    if bail:
        why = bail
    elif skipped is not None:
        why = "the guest program skipped everything: " + skipped
    elif plan is None:
        why = "no TAP from the guest program"
    elif cases < plan:
        why = "%d of %d cases reported (the guest program or the VM died)" % (cases, plan)
    elif status is None:
        why = "the guest program did not end"
    elif (status != 0) != (fails != 0):
        why = "guest program exit status %d after %d failed case(s)" % (status, fails)
    elif qemu not in (None, 0):
        why = "QEMU exit status %d" % qemu
    if why:
        out += ["# " + x.lstrip("# ") for x in diag[-20:]]
        out.append("not ok %s: %s" % (prefix, why))
    return out


if __name__ == "__main__":
    # taplib.py guest PREFIX LOG [SHOW-REGEX]: guest_results() of LOG
    if len(sys.argv) in (4, 5) and sys.argv[1] == "guest":
        with open(sys.argv[3], "rb") as f:
            log = f.read().decode("utf-8", "replace")
        print("\n".join(guest_results(sys.argv[2], log,
                                      sys.argv[4] if len(sys.argv) > 4 else None)))
    else:
        sys.exit("usage: taplib.py guest PREFIX LOG [SHOW-REGEX]")
