# SPDX-License-Identifier: GPL-2.0
"""TAP output of the Python tests in this directory: collect checks with
check(name, ok, diag), then report() prints the plan and one line per check
(with the diagnostics of a failure) and returns the exit status."""

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
