#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run extoll_drvtest in throw-away VMs that carry the EXTOLL device model.

    drivers/extoll/tests/run-drvtest.py [--iommu] [--workdir DIR]

Needs `make modules qemu` (build/modules/extoll.ko, build/qemu-system-x86_64
with the `extoll` device).  Builds the test program and a private node image
in DIR (default: a temporary directory), then:
  1 node: every single-node test, unbind with a live endpoint (hold mode),
          rmmod refused while open, rmmod + modprobe, tests again;
  2 nodes: a 1 MiB put from node 0 into a region of node 1.
Fails if a test fails or the kernel log shows a warning/oops.  TAP output.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("BUILD") or os.path.join(TOP, "build")
sys.path.insert(0, os.path.join(TOP, "tools", "cluster"))
import exacluster as ec  # noqa: E402

NOISE = "dmesg | grep -iE 'warn|bug|oops|call trace|leak' | grep -v 'not a bug\\|report a bug'"
results = []


def tap(ok, name, out=""):
    results.append(ok)
    print("%sok %d - %s" % ("" if ok else "not ", len(results), name))
    if not ok:
        for line in out.splitlines()[-40:]:
            print("#  " + line)
    sys.stdout.flush()


def cluster(work, nodes, iommu):
    return ec.Cluster(nodes=nodes, name="xdt%d-%d" % (os.getpid(), nodes),
                      workdir=os.path.join(work, "run%d" % nodes),
                      initrd=os.path.join(work, "initramfs.cpio.gz"), exanet=False,
                      rdma_ranks=0, iommu=iommu,
                      extra_device_args=["-device", "extoll,node-id={node},num-nodes={nodes},"
                                         "fabric={sockdir}/extoll"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iommu", action="store_true", help="guest with intel-iommu")
    ap.add_argument("--workdir", help="keep image and logs here")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="extoll-drvtest-")
    img = os.path.join(work, "build")
    os.makedirs(os.path.join(img, "bin"), exist_ok=True)
    os.makedirs(os.path.join(img, "modules"), exist_ok=True)
    ko = os.path.join(BUILD, "modules", "extoll.ko")
    if not os.path.exists(ko):
        print("Bail out! %s missing (make modules)" % ko)
        return 1
    shutil.copy(ko, os.path.join(img, "modules"))
    shutil.copy(os.path.join(TOP, "drivers", "extoll", "60-extoll.rules"),
                os.path.join(img, "modules"))
    subprocess.run(["gcc", "-O1", "-Wall", "-pthread", "-I", os.path.join(TOP, "uapi"), "-o",
                    os.path.join(img, "bin", "extoll_drvtest"),
                    os.path.join(HERE, "extoll_drvtest.c")], check=True)
    env = dict(os.environ, TOP=TOP, BUILD=img)
    subprocess.run([os.path.join(TOP, "tools", "cluster", "mkinitramfs.sh"),
                    os.path.join(work, "initramfs.cpio.gz")], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    print("TAP version 13")
    with cluster(work, 1, args.iommu) as c:
        c.start()
        r = c.run(0, "extoll_drvtest", timeout=300)
        tap(r.rc == 0, "single-node tests", r.output)
        r = c.run(0, "rm -f /tmp/go; (extoll_drvtest hold > /tmp/hold.log 2>&1 &); "
                  "for i in $(seq 100); do grep -q ready /tmp/hold.log && break; sleep 0.1; done; "
                  "echo 0000:00:02.0 > /sys/bus/pci/drivers/extoll/unbind; touch /tmp/go; sleep 2; "
                  "cat /tmp/hold.log; grep -q 'SIGBUS' /tmp/hold.log && ! grep -q FAIL /tmp/hold.log "
                  "&& echo 0000:00:02.0 > /sys/bus/pci/drivers/extoll/bind && sleep 1 "
                  "&& test -c /dev/extoll/rma2", timeout=120)
        tap(r.rc == 0, "unbind with a live endpoint: ENODEV + SIGBUS, rebind", r.output)
        r = c.run(0, "sleep 100 < /dev/extoll/rma2 & P=$!; sleep 0.5; "
                  "if rmmod extoll; then echo rmmod succeeded with an open endpoint; exit 1; fi; "
                  "kill $P; wait; sleep 0.5; rmmod extoll && ! test -e /dev/extoll/rma2 && "
                  "modprobe extoll && sleep 1 && test -c /dev/extoll/velo2 && extoll_drvtest put,velo",
                  timeout=300)
        tap(r.rc == 0, "rmmod refused while open; rmmod, modprobe, tests again", r.output)
        r = c.run(0, NOISE)
        tap(r.output.strip() == "", "no kernel warnings (1 node)", r.output)
    with cluster(work, 2, args.iommu) as c:
        c.start()
        c.spawn(1, "extoll_drvtest target > /tmp/target.log 2>&1")
        info = ""
        for _ in range(200):
            info = c.run(1, "cat /tmp/target.info 2>/dev/null").output.strip()
            if info:
                break
            time.sleep(0.2)
        ok = len(info.split()) == 3
        out = ""
        if ok:
            r = c.run(0, "extoll_drvtest source " + info, timeout=120)
            out = r.output
            ok = r.rc == 0
            for _ in range(50):
                t = c.run(1, "cat /tmp/target.log").output
                if "PASSED" in t or "FAILED" in t:
                    break
                time.sleep(0.2)
            out += t
            ok = ok and "PASSED" in t
        tap(ok, "two-node put into a registered region", out)
        noise = c.run(0, NOISE).output + c.run(1, NOISE).output
        tap(noise.strip() == "", "no kernel warnings (2 nodes)", noise)
    print("1..%d" % len(results))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
