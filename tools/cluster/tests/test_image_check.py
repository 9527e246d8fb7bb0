#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit test of the stale node image rule (TAP): exacluster.py's
stale_image() and `exacluster check-image` on a build tree in a temporary
directory, with a fake image and fake inputs whose modification times the
test sets.  An image newer than every file mkinitramfs.sh packs passes,
one input newer is refused with the line naming the rebuild command and
the override, build outputs outside the image do not count, and
EXACLUSTER_STALE_IMAGE_OK=1 or another image (EXACLUSTER_INITRD) passes.
run-tests refuses the same image (exit 2) before running anything; the
device-model scripts that boot the image ask check-image first."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# installed as build/host-tests/test_image_check, or run where it is
TOP = os.environ.get("TOP") or next(
    d for d in (os.path.dirname(os.path.dirname(HERE)), os.path.dirname(os.path.dirname(
        os.path.dirname(HERE)))) if os.path.isdir(os.path.join(d, "tools", "cluster")))
CLUSTER = os.path.join(TOP, "tools", "cluster")
sys.path[:0] = [os.path.join(HERE, ".."), CLUSTER]
from taplib import check, report  # noqa: E402
import exacluster  # noqa: E402

T0 = 1_700_000_000 * 10**9      # the inputs' time (ns)
BUILT = T0 + 60 * 10**9         # the image's: a minute later
LATER = BUILT + 60 * 10**9      # a change after the image

# what mkinitramfs.sh packs from the build tree
INPUTS = ["bin/exanet-pingpong", "lib/libexanet.so.1.4", "lib/libexanet.pc",
          "selftests/exanet/exanet_basic", "selftests/exanet/mpi/exanet_mpi_check",
          "selftests/extoll/tests.list", "modules/exanet.ko", "ompi/mca_coll_exanet.so"]
# build outputs that are not in the image (make check builds some of them
# after it: they must not make the image stale)
OTHERS = ["bin/exanet-mgmt-hub", "host-tests/test_qga", "device-tests/exanet-regtest",
          "man/exacluster.1", "examples/hello", "deb/exanet-tools.deb",
          "modules/60-exanet.rules", "include/exanet/libexanet.h", "pkgconfig/rma2.pc",
          "test-results.json", "qemu-system-x86_64"]


def touch(path, ns):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a"):
        pass
    os.utime(path, ns=(ns, ns))


def make_tree(root):
    build = os.path.join(root, "build")
    for f in INPUTS + OTHERS:
        touch(os.path.join(build, f), T0)
    # a library's soname link, as lib/build.mk makes it
    os.symlink("libexanet.so.1.4", os.path.join(build, "lib", "libexanet.so.1"))
    touch(os.path.join(build, "initramfs.cpio.gz"), BUILT)
    return build


def cli_env(build, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("EXACLUSTER_STALE_IMAGE_OK", "EXACLUSTER_INITRD")}
    env.update(BUILD=build, TOP=TOP, **extra)
    return env


def check_image(build, **extra):
    p = subprocess.run([sys.executable, os.path.join(CLUSTER, "exacluster"), "check-image"],
                       env=cli_env(build, **extra), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def main():
    root = tempfile.mkdtemp(prefix="test_image_check.")
    try:
        run_checks(root)
    finally:
        shutil.rmtree(root)
    return report()


def run_checks(root):
    build = make_tree(root)
    image = os.path.join(build, "initramfs.cpio.gz")

    def stale(**environ):
        return exacluster.stale_image(build=build, environ=environ)

    check("inputs: every packed file, not the other build outputs",
          sorted(os.path.relpath(p, build) for p in exacluster.image_inputs(build))
          == sorted(INPUTS + ["lib/libexanet.so.1"]),
          sorted(exacluster.image_inputs(build)))
    check("fresh image: no complaint", stale() is None, stale())
    rc, out, err = check_image(build)
    check("fresh image: check-image exits 0 and says nothing", rc == 0 and not out + err,
          "rc %d, %r %r" % (rc, out, err))

    for f in OTHERS:
        touch(os.path.join(build, f), LATER)
    check("build outputs outside the image, changed later: still fresh",
          stale() is None, stale())

    for f in INPUTS:
        touch(os.path.join(build, f), LATER)
        msg = stale()
        check("%s changed after the image: refused, naming it" % f,
              msg is not None and os.path.join(build, f) in msg, msg)
        touch(os.path.join(build, f), T0)
    check("inputs back to their old time: fresh again", stale() is None, stale())

    touch(os.path.join(build, "selftests/exanet/exanet_basic"), LATER)
    touch(os.path.join(build, "lib/libexanet.so.1.4"), LATER + 10**9)
    touch(os.path.join(build, "modules/exanet.ko"), LATER + 2 * 10**9)
    msg = stale() or ""
    # after exanet.ko: libexanet.so.1.4, its soname link (with its target's
    # time, as make sees it) and exanet_basic
    check("the message: one line, the image, the newest input, how many more",
          "\n" not in msg and image in msg and
          re.search(r"older than \S*/modules/exanet\.ko and 3 more of its inputs", msg), msg)
    check("the message names the command that rebuilds it and the override",
          "`make all initramfs`" in msg and "EXACLUSTER_STALE_IMAGE_OK=1" in msg, msg)
    rc, out, err = check_image(build)
    check("stale image: check-image exits 2 with that one line on stderr",
          rc == 2 and not out and err.strip() == "exacluster: " + msg,
          "rc %d, %r %r" % (rc, out, err))

    check("EXACLUSTER_STALE_IMAGE_OK=1: accepted",
          stale(EXACLUSTER_STALE_IMAGE_OK="1") is None)
    rc, out, err = check_image(build, EXACLUSTER_STALE_IMAGE_OK="1")
    check("EXACLUSTER_STALE_IMAGE_OK=1: check-image exits 0", rc == 0 and not err,
          "rc %d, %r" % (rc, err))
    check("EXACLUSTER_STALE_IMAGE_OK=0: still refused",
          stale(EXACLUSTER_STALE_IMAGE_OK="0") is not None)
    own = os.path.join(root, "own.cpio.gz")
    touch(own, BUILT)
    check("EXACLUSTER_INITRD names another image: not checked",
          stale(EXACLUSTER_INITRD=own) is None)
    check("EXACLUSTER_INITRD names this image: checked",
          stale(EXACLUSTER_INITRD=image) is not None)
    check("Cluster(initrd=another image): not checked",
          exacluster.stale_image(initrd=own, build=build, environ={}) is None)

    # run-tests: refused before anything runs; with nothing to run besides
    # (no lists, no device tests, no fabtests) a run that did not refuse
    # would end at once with no tests
    rt = [sys.executable, os.path.join(CLUSTER, "run-tests"), "--no-host", "--no-default-list",
          "--no-device-tests", "--no-fabtests", "--no-getting-started",
          "--json", os.path.join(root, "results.json")]
    p = subprocess.run(rt, env=cli_env(build), capture_output=True, text=True, timeout=60)
    check("run-tests on a stale image: exit 2, the one line on stderr, nothing run",
          p.returncode == 2 and p.stderr.strip() == "run-tests: " + msg and not p.stdout,
          "rc %d, %r %r" % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run(rt + ["--no-vm"], env=cli_env(build), capture_output=True, text=True,
                       timeout=60)
    check("run-tests --no-vm (no image booted): not refused", p.returncode == 0,
          "rc %d, %r %r" % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run(rt, env=cli_env(build, EXACLUSTER_STALE_IMAGE_OK="1"),
                       capture_output=True, text=True, timeout=60)
    check("run-tests with EXACLUSTER_STALE_IMAGE_OK=1: not refused", p.returncode == 0,
          "rc %d, %r %r" % (p.returncode, p.stdout, p.stderr))

    os.unlink(image)
    check("no image: nothing to compare (its users report it missing)", stale() is None)

    # every device-model script that boots the node image (the ones that do
    # not build their own through vm-lib.sh) asks check-image before it runs
    tests = os.path.join(TOP, "qemu-devices", "tests")
    scripts = sorted(f for f in os.listdir(tests) if re.fullmatch(r"run-.*vm-tests\.sh", f))
    asking, own_image = [], []
    for f in scripts:
        with open(os.path.join(tests, f)) as fh:
            text = fh.read()
        if "vm-lib.sh" in text:
            own_image.append(f)
        elif re.search(r'^"\$\(dirname "\$0"\)/\.\./\.\./tools/cluster/exacluster" check-image '
                       r'\|\| exit\n(.*\n)*exec ', text, re.M):
            asking.append(f)
    check("device-model scripts booting the node image ask check-image first (%d of them)"
          % len(asking), asking and len(asking) + len(own_image) == len(scripts),
          "neither: %s" % sorted(set(scripts) - set(asking) - set(own_image)))


if __name__ == "__main__":
    sys.exit(main())
