#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""exacluster: boot N emulated ExaNet nodes (one QEMU each) and run commands.

Library use (Python 3 stdlib only)::

    import sys; sys.path.insert(0, "tools/cluster")
    from exacluster import Cluster
    with Cluster(nodes=2) as c:
        rc, out = c.run(0, "cat /sys/class/exanet/exanet0/node_id", timeout=30)
        results = c.run_all(["prog --server", "prog --client"], timeout=60)

Each node: q35, 1 vCPU, 512 MiB, Debian kernel + $BUILD/initramfs.cpio.gz,
console (ttyS0) logged to <rundir>/n<i>.console, commands through
qemu-guest-agent on virtio-serial ports (tools/cluster/qga.py), management
Ethernet (virtio-net, 10.42.0.<i+1>/24, MAC 52:54:00:42:00:<i>) over QEMU
dgram unix sockets (direct pair for 2 nodes, exanet-mgmt-hub otherwise), and
the exanet device
(-device exanet,node-id=<i>,num-nodes=<N>,fabric=<sockdir>/fabric).
With trace=[patterns] (exacluster up --trace PATTERN) each QEMU enables
those trace events (log backend, host-clock timestamps) and writes them to
<rundir>/n<i>.trace.

Every process started is recorded in <rundir>/pids and state.json; teardown
powers nodes off through qemu-ga, then SIGTERM/SIGKILLs exactly the recorded
PIDs.  It runs on normal exit, exceptions, SIGINT, SIGTERM and SIGHUP.
See Documentation/cluster.md.
"""

import base64
import itertools
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:     # qga.py, beside this file
    sys.path.append(HERE)
from qga import QGA_PORTS, PortKeeper, QgaClient, port_sockets  # noqa: E402
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD") or os.path.join(TOP, "build")
CACHE = os.environ.get("CACHE") or os.path.expanduser("~/.cache/exanet-fabric")

TIMEOUT_RC = 124        # rc reported when the node-side timeout killed a command
SUN_PATH_MAX = 100      # keep unix socket paths below the 108-byte limit
MGMT_NET = "10.42.0."
SHARE_TAG = "exashare"      # virtio-9p mount tag of --share
SHARE_MOUNT = "/share"      # where the nodes mount it (tools/cluster/init)


def project_version():
    """The project's version: the top entry of debian/changelog in this
    script's tree (the one source; the C tools get it from the build)."""
    path = os.path.join(os.path.dirname(os.path.dirname(HERE)), "debian", "changelog")
    try:
        with open(path) as f:
            m = re.match(r"\S+ \(([^)]+)\)", f.readline())
    except OSError:
        m = None
    return m.group(1) if m else "unknown"


class ClusterError(Exception):
    """Boot failure, dead node, agent not answering."""


class AgentTimeout(ClusterError):
    """The agent did not answer within the host-side deadline."""


class RunResult(tuple):
    """(rc, output) tuple with extra attributes: timed_out, node, seconds."""

    def __new__(cls, rc, output, timed_out=False, node=None, seconds=0.0):
        self = tuple.__new__(cls, (rc, output))
        self.timed_out = timed_out
        self.node = node
        self.seconds = seconds
        return self

    @property
    def rc(self):
        return self[0]

    @property
    def output(self):
        return self[1]


def log(msg):
    if os.environ.get("EXACLUSTER_QUIET") != "1":
        print("exacluster: " + msg, file=sys.stderr, flush=True)


# The node image is stale when a file of the build tree that
# tools/cluster/mkinitramfs.sh packs is newer: its programs would not be
# the ones just built.  This is the one home of that rule (run-tests, the
# device-model scripts through `exacluster check-image`, Cluster.start()).
REBUILD_IMAGE = "make all initramfs"
STALE_IMAGE_OK = "EXACLUSTER_STALE_IMAGE_OK"


def image_inputs(build):
    """The files of the build tree the node image is made of, as
    mkinitramfs.sh takes them: build/bin/* but the management hub (a host
    program), all of build/lib and build/selftests, build/modules/*.ko and
    Open MPI's coll/exanet component.  Other build outputs (host tests,
    device tests, man pages, examples, packages) are not in the image."""
    def walk(d):
        for root, _, files in os.walk(d):
            for f in files:
                yield os.path.join(root, f)

    bindir = os.path.join(build, "bin")
    for p in walk(bindir):
        if p != os.path.join(bindir, "exanet-mgmt-hub"):
            yield p
    yield from walk(os.path.join(build, "lib"))
    yield from walk(os.path.join(build, "selftests"))
    modules = os.path.join(build, "modules")
    if os.path.isdir(modules):
        for f in os.listdir(modules):
            if f.endswith(".ko"):
                yield os.path.join(modules, f)
    coll = os.path.join(build, "ompi", "mca_coll_exanet.so")
    if os.path.lexists(coll):
        yield coll


def _mtime_ns(path):
    """The modification time make sees (a symbolic link's target's; a
    dangling link's own), None for a file gone meanwhile."""
    for stat in (os.stat, os.lstat):
        try:
            return stat(path).st_mtime_ns
        except FileNotFoundError:
            continue
    return None


def newer_image_inputs(image, build):
    """The inputs of IMAGE in BUILD modified after it, newest first; none
    when IMAGE does not exist (its users say that themselves)."""
    try:
        built = os.stat(image).st_mtime_ns
    except FileNotFoundError:
        return []
    newer = []
    for p in image_inputs(build):
        t = _mtime_ns(p)
        if t is not None and t > built:
            newer.append((t, p))
    return [p for _, p in sorted(newer, reverse=True)]


def _shown(path):
    """PATH relative to the working directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def stale_image(initrd=None, build=None, environ=None):
    """One line saying that the build tree's node image is older than its
    inputs and how to rebuild it, or None: it is up to date, missing, or
    the image to boot (INITRD, else EXACLUSTER_INITRD) is another one,
    e.g. a user's own, or EXACLUSTER_STALE_IMAGE_OK=1 accepts it as it is."""
    environ = os.environ if environ is None else environ
    build = build or BUILD
    image = os.path.join(build, "initramfs.cpio.gz")
    initrd = initrd or environ.get("EXACLUSTER_INITRD") or image
    if environ.get("EXACLUSTER_STALE_IMAGE_OK") == "1" or \
            os.path.realpath(initrd) != os.path.realpath(image):
        return None
    newer = newer_image_inputs(image, build)
    if not newer:
        return None
    more = " and %d more of its inputs" % (len(newer) - 1) if len(newer) > 1 else ""
    return ("stale node image: %s is older than %s%s; rebuild it with `%s` "
            "(%s=1 boots it as it is)"
            % (_shown(image), _shown(newer[0]), more, REBUILD_IMAGE, STALE_IMAGE_OK))


def kver():
    v = os.environ.get("KVER")
    if v:
        return v
    try:
        return subprocess.check_output([os.path.join(TOP, "scripts", "kver.sh")],
                                       text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        vs = sorted(d for d in os.listdir("/lib/modules") if d.endswith("-amd64"))
        if not vs:
            raise ClusterError("no guest kernel (run: make deps)")
        return vs[-1]


def default_qemu():
    q = os.environ.get("EXACLUSTER_QEMU")
    if q:
        return q
    q = os.path.join(BUILD, "qemu-system-x86_64")
    if os.path.exists(q):
        return q
    for d in os.environ.get("PATH", "").split(":"):
        c = os.path.join(d, "qemu-system-x86_64")
        if os.access(c, os.X_OK):
            return c
    raise ClusterError("no qemu-system-x86_64 (build it: make, or set EXACLUSTER_QEMU)")


def firmware_dir(qemu):
    fw = os.environ.get("EXACLUSTER_FIRMWARE")
    if fw:
        return fw
    real = os.path.realpath(qemu)
    cand = os.path.join(CACHE, "share", "qemu")
    if real.startswith(os.path.realpath(CACHE) + "/") and os.path.isdir(cand):
        return cand
    return None


def _has_pvh_note(elf):
    import struct
    try:
        if elf[:4] != b"\x7fELF" or elf[4] != 2:
            return False
        phoff, = struct.unpack_from("<Q", elf, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
        for i in range(phnum):
            ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
            if ptype != 4:      # PT_NOTE
                continue
            o = off
            while o + 12 <= off + filesz:
                nsz, dsz, typ = struct.unpack_from("<III", elf, o)
                if elf[o + 12:o + 12 + nsz].startswith(b"Xen") and typ == 18:
                    return True     # XEN_ELFNOTE_PHYS32_ENTRY
                o += 12 + ((nsz + 3) & ~3) + ((dsz + 3) & ~3)
    except (struct.error, IndexError):
        return False
    return False


def boot_kernel(kernel):
    """Return the image to pass to -kernel.  A bzImage with an xz payload is
    unpacked once to an ELF vmlinux with a PVH entry note (cached next to the
    run dirs): QEMU then boots it directly and TCG skips the ~5 s in-guest
    decompression.  EXACLUSTER_PVH=0 keeps the bzImage."""
    if os.environ.get("EXACLUSTER_PVH", "1") == "0":
        return kernel
    try:
        stt = os.stat(kernel)
        cache_dir = os.path.join(BUILD, "cluster")
        out = os.path.join(cache_dir, "vmlinux-%s-%d-%d.pvh" % (
            os.path.basename(kernel), stt.st_size, int(stt.st_mtime)))
        if os.path.exists(out):
            return out
        with open(kernel, "rb") as f:
            data = f.read()
        if data[:4] == b"\x7fELF":
            return kernel
        k = data.find(b"\xfd7zXZ\x00")
        if k < 0:
            return kernel
        import lzma
        elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[k:])
        if not _has_pvh_note(elf):
            return kernel
        os.makedirs(cache_dir, exist_ok=True)
        tmp = "%s.%d.tmp" % (out, os.getpid())
        with open(tmp, "wb") as f:
            f.write(elf)
        os.replace(tmp, out)
        for fn in os.listdir(cache_dir):   # drop stale unpacked kernels
            if fn.startswith("vmlinux-") and fn.endswith(".pvh") and \
                    os.path.join(cache_dir, fn) != out:
                try:
                    os.unlink(os.path.join(cache_dir, fn))
                except OSError:
                    pass
        return out
    except (OSError, ValueError, EOFError) as e:
        log("cannot unpack %s for PVH boot (%s); booting the bzImage" % (kernel, e))
        return kernel


_dev_cache = {}


def qemu_has_device(qemu, dev):
    key = (os.path.realpath(qemu), dev)
    if key not in _dev_cache:
        try:
            out = subprocess.run([qemu, "-nodefaults", "-machine", "none", "-device", "help"],
                                 capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _dev_cache[key] = ('name "%s"' % dev) in out
    return _dev_cache[key]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:    # a zombie is not alive
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pid_is_ours(pid, marker):
    """True if pid is alive and its command line mentions marker (the run dir)."""
    if not pid_alive(pid):
        return False
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def _set_pdeathsig():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:   # noqa: BLE001 - best effort
        pass


_live = []              # clusters owned by this process (for atexit / signals)
_live_lock = threading.Lock()


def _teardown_all():
    with _live_lock:
        cs = list(_live)
    for c in cs:
        try:
            c.close()
        except Exception as e:  # noqa: BLE001
            log("teardown failed: %s" % e)


import atexit  # noqa: E402
atexit.register(_teardown_all)


def parse_on_off(value, what):
    """'on'/'off' (also 1/0, yes/no, true/false) -> bool; ValueError otherwise."""
    v = str(value).strip().lower()
    if v in ("on", "1", "yes", "true"):
        return True
    if v in ("off", "0", "no", "false"):
        return False
    raise ValueError("%s must be on or off, not %r" % (what, value))


PORTS = ("x+", "x-", "y+", "y-", "z+", "z-")
TORUS_MAX_DIM = 255


def default_torus(nodes):
    """The documented default shape: the most cube-like X >= Y >= Z
    (smallest X, then smallest Y) with X * Y * Z = nodes."""
    best = (nodes, 1, 1)
    z = 1
    while z * z * z <= nodes:
        if nodes % z == 0:
            y = z
            while y * y <= nodes // z:
                if (nodes // z) % y == 0:
                    x = nodes // z // y
                    if (x, y) < best[:2]:
                        best = (x, y, z)
                y += 1
        z += 1
    return best


def parse_torus(spec, nodes):
    """'XxYxZ' -> (X, Y, Z), checked against the node count; None -> default."""
    if spec is None or spec == "":
        return default_torus(nodes)
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", str(spec))
    if not m or not all(1 <= int(d) <= TORUS_MAX_DIM for d in m.groups()):
        raise ValueError("torus %r is not XxYxZ with each of X, Y, Z in 1..%d"
                         % (spec, TORUS_MAX_DIM))
    dims = tuple(int(d) for d in m.groups())
    if dims[0] * dims[1] * dims[2] != nodes:
        raise ValueError("torus %s has %d nodes, not %d (-n)"
                         % (spec, dims[0] * dims[1] * dims[2], nodes))
    return dims


# exacluster fault actions -> (property suffix, value parser)
PPM_MAX = 1000000
LINK_NS_MAX = 10000000


def parse_fault_action(action):
    """'down' | 'up' | 'drop=PPM' | 'corrupt=PPM' | 'mbps=N' | 'ns=N' ->
    (property suffix, value) of the link-P[-suffix] device property."""
    if action in ("up", "down"):
        return "", action
    key, eq, val = action.partition("=")
    limits = {"drop": ("drop-ppm", PPM_MAX), "corrupt": ("corrupt-ppm", PPM_MAX),
              "mbps": ("mbps", 2**32 - 1), "ns": ("ns", LINK_NS_MAX)}
    if not eq or key not in limits:
        raise ValueError("unknown fault action %r (down, up, drop=PPM, corrupt=PPM, "
                         "mbps=N, ns=N)" % action)
    prop, hi = limits[key]
    if not re.fullmatch(r"\d+", val) or int(val) > hi:
        raise ValueError("%s must be an integer 0..%d, not %r" % (key, hi, val))
    return "-" + prop, int(val)


class Cluster:
    """N emulated nodes.  Use as a context manager (or start()/close())."""

    def __init__(self, nodes=2, name=None, workdir=None, qemu=None, kernel=None,
                 initrd=None, extra_device_args=None, iommu="auto", exanet="auto",
                 rdma_ranks="auto", memory="512M", smp=1, accel=None, append="", boot_timeout=None,
                 detach=False, mgmt_net=True, extoll=False, trace=None, poll_yield=None,
                 rx_spin_us=None,
                 torus=None, link_mbps=None, link_ns=None, direct=None, share=None):
        if not 1 <= int(nodes) <= 64:
            raise ValueError("nodes must be 1..64")
        self.nodes = int(nodes)
        # The 3D torus of both fabrics (Documentation/fabric.md); link_mbps /
        # link_ns: rate and per-hop latency of every link (None: the
        # device defaults, unlimited and 300 ns).
        self.torus = parse_torus(torus or os.environ.get("EXACLUSTER_TORUS"), self.nodes)
        for what, v, hi in (("link_mbps", link_mbps, 2**32 - 1),
                            ("link_ns", link_ns, LINK_NS_MAX)):
            if v is not None and not 0 <= int(v) <= hi:
                raise ValueError("%s must be 0..%d" % (what, hi))
        self.link_mbps = link_mbps
        self.link_ns = link_ns
        self.name = name or "c%d-%d" % (os.getpid(), int(time.time() * 1000) % 100000)
        self.rundir = os.path.abspath(workdir or os.path.join(BUILD, "cluster", self.name))
        self.qemu = qemu or default_qemu()
        self.kver = kver()
        self.kernel = kernel or os.environ.get("EXACLUSTER_KERNEL") or "/boot/vmlinuz-" + self.kver
        self.initrd = initrd or os.environ.get("EXACLUSTER_INITRD") or \
            os.path.join(BUILD, "initramfs.cpio.gz")
        self.extra_device_args = extra_device_args
        # RDMA: rdma_ranks exanet-ctx DMA-context functions per node (one per
        # rank, each in its own root-bus slot, hence its own IOMMU group);
        # "auto" = 8 when the emulator has the device.  iommu "auto" = on
        # when ctx functions are present (RDMA needs the IOMMU).
        env_rk = os.environ.get("EXACLUSTER_RDMA_RANKS")
        if env_rk is not None and rdma_ranks == "auto":
            rdma_ranks = int(env_rk)
        self.rdma_ranks = rdma_ranks
        env_io = os.environ.get("EXACLUSTER_IOMMU")
        if env_io is not None and iommu == "auto":
            iommu = {"0": False, "1": True}.get(env_io, "auto")
        self.iommu = iommu
        env_ex = os.environ.get("EXACLUSTER_EXANET")
        if env_ex is not None and exanet == "auto":
            exanet = {"0": False, "1": True}.get(env_ex, "auto")
        self.exanet = exanet
        # EXTOLL NIC (-device extoll) on its own fabric directory, so a node
        # can carry both NICs; off unless asked for (or EXACLUSTER_EXTOLL=1).
        env_xt = os.environ.get("EXACLUSTER_EXTOLL")
        if env_xt is not None and not extoll:
            extoll = env_xt == "1"
        self.extoll = bool(extoll)
        # QEMU trace event patterns (e.g. "exanet_*"); EXACLUSTER_TRACE is a
        # comma-separated list used when none are given.
        if trace is None and os.environ.get("EXACLUSTER_TRACE"):
            trace = os.environ["EXACLUSTER_TRACE"].split(",")
        self.trace = [t.strip() for t in (trace or []) if t.strip()]
        for t in self.trace:
            if "," in t or "=" in t:
                raise ValueError("bad trace event pattern %r" % t)
        # Poll parking of the device models (Documentation/cluster.md):
        # None = auto, on when the nodes outnumber the host's cores (with a
        # core per node it gains nothing, and a park holds up a process on
        # the same vCPU that the poller waits for); EXACLUSTER_POLL_YIELD.
        env_py = os.environ.get("EXACLUSTER_POLL_YIELD")
        if env_py is not None and poll_yield is None:
            poll_yield = parse_on_off(env_py, "EXACLUSTER_POLL_YIELD")
        if poll_yield is None:
            poll_yield = self.nodes > (os.cpu_count() or 1)
        self.poll_yield = poll_yield
        # The fabric receive thread's busy look after a wake-up (rx-spin-us,
        # Documentation/cluster.md): off unless asked for (its tail costs);
        # EXACLUSTER_RX_SPIN_US.
        env_spin = os.environ.get("EXACLUSTER_RX_SPIN_US")
        if rx_spin_us is None and env_spin is not None:
            rx_spin_us = int(env_spin)
        self.rx_spin_us = rx_spin_us or 0
        # Direct delivery (Documentation/fabric.md section 9): each node's
        # guest RAM is a shared memory object its peers' NIs write into;
        # off: everything takes the rings (comparisons).  EXACLUSTER_DIRECT.
        env_direct = os.environ.get("EXACLUSTER_DIRECT")
        if direct is None and env_direct is not None:
            direct = parse_on_off(env_direct, "EXACLUSTER_DIRECT")
        self.direct = True if direct is None else bool(direct)
        # A host directory every node mounts read-write at SHARE_MOUNT
        # (virtio-9p; Documentation/cluster.md "Your own programs");
        # EXACLUSTER_SHARE.
        share = share or os.environ.get("EXACLUSTER_SHARE") or None
        if share is not None:
            share = os.path.abspath(share)
            if not os.path.isdir(share):
                raise ValueError("--share %s: not a directory" % share)
            if "," in share:
                raise ValueError("--share %s: QEMU takes no ',' in the path" % share)
        self.share = share
        # Commands go through qemu-guest-agent (virtio-serial ports
        # org.qemu.guest_agent.<k> on <sockdir>/n<i>.qga[<k>]).
        self.qga_clients = {}
        self.qga_keeper = None
        self._qga_seq = itertools.count()
        self.memory = memory
        self.smp = smp
        self.accel = accel or os.environ.get("EXACLUSTER_ACCEL") or "tcg"
        self.append = append
        self.boot_timeout = float(boot_timeout or os.environ.get("EXACLUSTER_BOOT_TIMEOUT")
                                  or 120 + 45 * self.nodes)
        self.detach = detach
        self.mgmt_net = mgmt_net
        self.procs = {}         # key -> Popen (only when we are the parent)
        self.pids = {}          # key -> pid  ("hub", "n0", "n1", ...)
        self.sockdir = None
        self.boot_times = []
        self.closed = False
        self.started = False
        self._old_handlers = {}
        self.attached = False

    # ----------------------------------------------------------------- paths
    def console_log(self, node):
        return os.path.join(self.rundir, "n%d.console" % node)

    def qemu_log(self, node):
        return os.path.join(self.rundir, "n%d.qemu.log" % node)

    def trace_log(self, node):
        """Trace output of the node's QEMU (when started with trace=...)."""
        return os.path.join(self.rundir, "n%d.trace" % node)

    @staticmethod
    def node_ip(node):
        return MGMT_NET + str(node + 1)

    def peers(self, k=None):
        return ",".join(self.node_ip(i) for i in range(k or self.nodes))

    def _sock(self, what):
        return os.path.join(self.sockdir, what)

    def mpirun_command(self, argv, per_node=1, nodes=None, provider=None):
        """Shell command for node 0: Open MPI's mpirun with per_node ranks on
        each of nodes 0..nodes-1 (default all), launched through ssh; the
        node image's openmpi-mca-params.conf selects the exanet provider,
        provider another (extoll)."""
        return mpirun_command(argv, per_node, nodes or self.nodes, provider)

    # ------------------------------------------------------------- lifecycle
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, et, ev, tb):
        self.close()
        return False

    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return

        def on_signal(signum, frame):
            raise SystemExit(128 + signum)
        for s in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[s] = signal.signal(s, on_signal)
            except (ValueError, OSError):
                pass

    def _restore_signals(self):
        for s, h in self._old_handlers.items():
            try:
                signal.signal(s, h)
            except (ValueError, OSError):
                pass
        self._old_handlers = {}

    def _prepare_dirs(self):
        os.makedirs(self.rundir, exist_ok=True)
        st = os.path.join(self.rundir, "state.json")
        old = {}
        if os.path.exists(st):
            try:
                with open(st) as f:
                    old = json.load(f)
            except (ValueError, OSError):
                old = {}
            if any(pid_is_ours(p, old.get("marker", self.rundir))
                   for p in old.get("pids", {}).values()):
                raise ClusterError("cluster %r is already running (%s); "
                                   "run: exacluster down --name %s"
                                   % (self.name, self.rundir, self.name))
            _cleanup_sockdir(old)
        for fn in os.listdir(self.rundir):
            p = os.path.join(self.rundir, fn)
            if os.path.islink(p) or not os.path.isdir(p):
                os.unlink(p)
        longest = os.path.join(self.rundir, "extoll-fabric" if self.extoll else "fabric",
                               "node%d.sock" % (self.nodes * 10))
        if len(longest) < SUN_PATH_MAX:
            self.sockdir = self.rundir
        else:
            self.sockdir = tempfile.mkdtemp(prefix="exac-")
            os.symlink(self.sockdir, os.path.join(self.rundir, "sock"))
        os.makedirs(self._sock("fabric"), exist_ok=True)
        for fn in os.listdir(self._sock("fabric")):
            try:
                os.unlink(os.path.join(self._sock("fabric"), fn))
            except OSError:
                pass
        if self.extoll:
            os.makedirs(self._sock("extoll-fabric"), exist_ok=True)
            for fn in os.listdir(self._sock("extoll-fabric")):
                try:
                    os.unlink(os.path.join(self._sock("extoll-fabric"), fn))
                except OSError:
                    pass

    def _write_state(self):
        st = {"name": self.name, "nodes": self.nodes, "rundir": self.rundir,
              "sockdir": self.sockdir, "marker": self.rundir if self.sockdir == self.rundir
              else self.sockdir, "pids": self.pids, "qemu": self.qemu,
              "initrd": self.initrd, "kernel": self.kernel, "owner": os.getpid(),
              "detached": self.detach, "boot_times": self.boot_times,
              "trace": self.trace, "extoll": self.extoll, "share": self.share,
              "exanet": self.use_exanet(),
              "torus": "x".join(map(str, self.torus)),
              "ips": [self.node_ip(i) for i in range(self.nodes)]}
        tmp = os.path.join(self.rundir, "state.json.tmp")
        with open(tmp, "w") as f:
            json.dump(st, f, indent=1)
        os.replace(tmp, os.path.join(self.rundir, "state.json"))
        with open(os.path.join(self.rundir, "pids"), "w") as f:
            for k, p in self.pids.items():
                f.write("%s %d\n" % (k, p))

    @property
    def marker(self):
        return self.rundir if self.sockdir == self.rundir else self.sockdir

    def _popen(self, key, argv, logfile):
        kw = {}
        if not self.detach and threading.current_thread() is threading.main_thread():
            kw["preexec_fn"] = _set_pdeathsig
        with open(logfile, "ab") as lf:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf,
                                 start_new_session=True, close_fds=True, **kw)
        self.procs[key] = p
        self.pids[key] = p.pid
        self._write_state()
        return p

    def use_exanet(self):
        if self.exanet == "auto":
            self.exanet = qemu_has_device(self.qemu, "exanet")
            if not self.exanet:
                log("%s has no 'exanet' device: nodes boot without it" % self.qemu)
        return bool(self.exanet)

    def check_qga(self):
        """The emulator must have virtio-serial: the command channel (and
        virtio-9p for a share)."""
        if not qemu_has_device(self.qemu, "virtio-serial-pci"):
            raise ClusterError("%s has no virtio-serial-pci, which the command channel "
                               "(qemu-guest-agent) needs: rebuild the emulator (make deps)"
                               % self.qemu)
        if self.share and not qemu_has_device(self.qemu, "virtio-9p-pci"):
            raise ClusterError("%s has no virtio-9p-pci, which --share needs: rebuild the "
                               "emulator (make deps)" % self.qemu)

    def use_rdma_ranks(self):
        if self.rdma_ranks == "auto":
            self.rdma_ranks = 8 if (self.use_exanet() and
                                    qemu_has_device(self.qemu, "exanet-ctx")) else 0
        if self.iommu == "auto":
            self.iommu = self.rdma_ranks > 0
        return int(self.rdma_ranks) if self.use_exanet() else 0

    def qemu_argv(self, i):
        n = self.nodes
        ranks = self.use_rdma_ranks()
        # init_on_alloc=0: Debian zeroes every page allocation by default;
        # under TCG that was 6.6% of a TCP receiver's CPU (clear_page_rep,
        # perf in the node), spent on skb pages about to be overwritten.
        # The drivers zero what they map to users themselves (__GFP_ZERO,
        # dma_alloc_coherent).
        cmdline = ("console=ttyS0 exacluster.node=%d exacluster.nnodes=%d quiet panic=-1 "
                   "mitigations=off sysrq_always_enabled tsc=reliable no_timer_check "
                   "init_on_alloc=0 exacluster.qga=%d" % (i, n, QGA_PORTS))
        if self.accel == "tcg":
            # Our emulator's TSC counts host nanoseconds (qemu-devices/
            # patches/0001-*): 1 GHz exactly, so no calibration against the
            # PIT, which a loaded host skews.
            cmdline += " tsc_early_khz=1000000"
        if self.iommu:
            cmdline += " intel_iommu=on"
        if self.share:
            cmdline += " exacluster.share=" + SHARE_TAG
        if self.append:
            cmdline += " " + self.append
        machine = "q35"
        ram = []
        if self.direct:
            # a memfd the peers map through /proc/<pid>/fd (fabric-direct.h)
            machine += ",memory-backend=exaram"
            ram = ["-object", "memory-backend-memfd,id=exaram,size=%s,share=on"
                   % self.memory]
        a = [self.qemu, "-name", "exanet-node%d,process=exanet-%s-n%d" % (i, self.name, i),
             "-machine", machine, "-accel", self.accel, "-m", str(self.memory),
             "-smp", str(self.smp)] + ram + ["-nodefaults", "-display", "none", "-no-reboot",
             "-kernel", self.boot_image, "-initrd", self.initrd, "-append", cmdline,
             "-serial", "file:" + self.console_log(i),
             "-qmp", "unix:%s,server=on,wait=off" % self._sock("n%d.qmp" % i)]
        fw = firmware_dir(self.qemu)
        if fw:
            a[1:1] = ["-L", fw]
        if self.trace:
            # log backend: "<tid>@<sec>.<usec>:<event> <args>" lines
            for t in self.trace:
                a += ["-trace", "enable=" + t]
            a += ["-trace", "file=" + self.trace_log(i), "-msg", "timestamp=on"]
        if self.iommu:
            a += ["-device", "intel-iommu,aw-bits=48"]
        if self.mgmt_net:
            if n == 2:
                remote = self._sock("n%d.net" % (1 - i))
            else:
                remote = self._sock("hub.net")
            a += ["-netdev", "dgram,id=mgmt,local.type=unix,local.path=%s,"
                  "remote.type=unix,remote.path=%s" % (self._sock("n%d.net" % i), remote),
                  "-device", "virtio-net-pci,netdev=mgmt,mac=52:54:00:42:00:%02x" % i]
        park = ",poll-yield=%s,torus=%s" % ("on" if self.poll_yield else "off",
                                            "x".join(map(str, self.torus)))
        if self.rx_spin_us:     # absent from older emulators: named only when used
            park += ",rx-spin-us=%d" % self.rx_spin_us
        if self.link_mbps is not None:
            park += ",link-mbps=%d" % int(self.link_mbps)
        if self.link_ns is not None:
            park += ",link-ns=%d" % int(self.link_ns)
        if not self.direct:
            park += ",direct=off"

        if self.use_exanet():
            a += ["-device", "exanet,id=exa0,node-id=%d,num-nodes=%d,fabric=%s%s"
                  % (i, n, self._sock("fabric"), park)]
            for r in range(ranks):
                a += ["-device", "exanet-ctx,ni=exa0,rank=%d" % r]
        if self.extoll:
            a += ["-device", "extoll,id=ext0,node-id=%d,num-nodes=%d,fabric=%s%s"
                  % (i, n, self._sock("extoll-fabric"), park)]
        extra = self.extra_device_args
        if callable(extra):
            extra = extra(i)
        fmt = {"node": i, "nodes": n, "rundir": self.rundir, "sockdir": self.sockdir,
               "fabric": self._sock("fabric")}
        for x in extra or []:
            a.append(x.format(**fmt) if isinstance(x, str) else str(x))
        if self.share:
            # security_model=none: files keep the host's owner and mode
            # (the nodes run as root), no xattrs needed on the host
            a += ["-fsdev", "local,id=exashare,path=%s,security_model=none" % self.share,
                  "-device", "virtio-9p-pci,fsdev=exashare,mount_tag=%s" % SHARE_TAG]
        # last, so that the other devices keep their PCI slots
        a += ["-device", "virtio-serial-pci,id=vser0"]
        for k, path in enumerate(port_sockets(self.sockdir, i)):
            a += ["-chardev", "socket,id=qga%d,path=%s,server=on,wait=off" % (k, path),
                  "-device", "virtserialport,bus=vser0.0,chardev=qga%d,"
                  "name=org.qemu.guest_agent.%d" % (k, k)]
        return a

    def start(self):
        if self.started:
            return self
        for f in (self.kernel, self.initrd):
            if not os.path.exists(f):
                raise ClusterError("missing %s (make initramfs / make deps)" % f)
        # a warning only: run-tests and the device-model scripts refuse
        stale = stale_image(self.initrd)
        if stale:
            log("warning: " + stale)
        self.check_qga()
        self._prepare_dirs()
        self.boot_image = boot_kernel(self.kernel)
        self.started = True
        if not self.detach:
            with _live_lock:
                _live.append(self)
            self._install_signals()
        t0 = time.monotonic()
        try:
            if self.mgmt_net and self.nodes != 2:
                hub = os.path.join(BUILD, "bin", "exanet-mgmt-hub")
                if not os.access(hub, os.X_OK):
                    raise ClusterError("%s missing (make %s)" % (hub, hub))
                self._popen("hub", [hub, self._sock("hub.net")] +
                            [self._sock("n%d.net" % i) for i in range(self.nodes)],
                            os.path.join(self.rundir, "hub.log"))
            for i in range(self.nodes):
                self._popen("n%d" % i, self.qemu_argv(i), self.qemu_log(i))
            log("booting %d node(s) in %s" % (self.nodes, self.rundir))
            self._wait_boot(t0)
        except BaseException:
            self.close()
            raise
        self._write_state()
        return self

    def _wait_boot(self, t0):
        """Wait until every node's qemu-ga answers (the last step of its
        boot); boot_times[i] = seconds from QEMU start until then."""
        from qga import QgaError
        deadline = t0 + self.boot_timeout
        self.boot_times = [None] * self.nodes
        errors = {}

        def wait(i):
            try:
                self.qga(i).wait_ready(max(1.0, deadline - time.monotonic()))
                self.boot_times[i] = round(time.monotonic() - t0, 2)
            except (QgaError, OSError) as e:
                errors[i] = e
        th = [threading.Thread(target=wait, args=(i,), daemon=True) for i in range(self.nodes)]
        for t in th:
            t.start()
        while any(t.is_alive() for t in th):
            for i in range(self.nodes):
                self._check_proc(i)
            for t in th:
                t.join(0.2)
        pending = sorted(errors)
        if pending:
            raise ClusterError("boot timeout (%.0fs): node(s) %s did not answer (%s); console:\n%s"
                               % (self.boot_timeout, pending, errors[pending[0]],
                                  self.console_tail(pending[0], 30)))
        log("%d node(s) up in %.1fs (per node: %s)" % (self.nodes, time.monotonic() - t0,
                                                      self.boot_times))
        if not self.detach:
            self.qga_keeper = PortKeeper([p for i in range(self.nodes)
                                          for p in port_sockets(self.sockdir, i)[1:]])
        else:
            self._start_keeper()

    def _start_keeper(self):
        """A detached cluster outlives this process, so its keeper is a
        process of its own, recorded as "keeper" like the QEMUs (its
        command line names the sockets, hence the marker).  It keeps every
        port, port 0 too: once `up` has returned nobody holds that one."""
        self._popen("keeper", [sys.executable, os.path.join(HERE, "qga.py"), "keep"] +
                    [p for i in range(self.nodes) for p in port_sockets(self.sockdir, i)],
                    os.path.join(self.rundir, "keeper.log"))

    # A node is idle enough to measure on when this share of its CPU time
    # went to the idle task over SETTLE_WINDOW seconds, twice in a row.
    SETTLE_IDLE = 0.9
    SETTLE_WINDOW = 0.5

    def wait_settled(self, timeout=60):
        """Wait until every node's CPU is mostly idle: a node is up as soon
        as its agent answers, while services it started (sshd needs about
        3 s of CPU under TCG) may still run and would disturb a
        measurement.  Returns {node: seconds waited}; ClusterError on
        timeout."""
        script = ("i=0; ok=0; while [ $i -lt %d ]; do "
                  "set -- $(head -1 /proc/stat); t1=$(($2+$3+$4+$5+$6+$7+$8)); d1=$(($5+$6)); "
                  "sleep %s; "
                  "set -- $(head -1 /proc/stat); t2=$(($2+$3+$4+$5+$6+$7+$8)); d2=$(($5+$6)); "
                  "if [ $(( (d2-d1)*100 )) -ge $(( (t2-t1)*%d )) ]; then ok=$((ok+1)); "
                  "else ok=0; fi; [ $ok -ge 2 ] && exit 0; i=$((i+1)); done; "
                  "top -bn1 | head -12; exit 1"
                  % (int(timeout / self.SETTLE_WINDOW), self.SETTLE_WINDOW,
                     int(self.SETTLE_IDLE * 100)))
        waited = {}
        for i, r in enumerate(self.run_all(script, timeout=timeout + 10)):
            if r.rc != 0:
                raise ClusterError("node %d did not settle within %ds (CPU below %d%% idle):\n%s"
                                   % (i, timeout, self.SETTLE_IDLE * 100, r.output))
            waited[i] = round(r.seconds, 1)
        log("settled (seconds per node: %s)" % waited)
        return waited

    def kill_node(self, node):
        """SIGKILL node's QEMU, as a crash or a power cut would end it (no
        goodbye, nothing flushed), and wait until it is gone.  Only a
        process this cluster started and still owns is signalled."""
        key = "n%d" % node
        if key not in self.pids or not self._alive(key, self.marker):
            raise ClusterError("node %d: no QEMU of this cluster runs" % node)
        self._signal(key, signal.SIGKILL)
        self._wait_exit([key], self.marker, 10.0)
        if self._alive(key, self.marker):
            raise ClusterError("node %d: QEMU (pid %d) outlived SIGKILL for 10 s"
                               % (node, self.pids[key]))
        q = self.qga_clients.pop(node, None)
        if q is not None:
            q.close()
        log("node %d killed (pid %d)" % (node, self.pids[key]))

    def start_node(self, node, timeout=None):
        """Boot a node that was killed again with its command line: a new
        QEMU process, hence a new incarnation of its NIs (fresh RAM, ATU,
        queues; Documentation/fabric.md, "Restart and death").  Returns the
        seconds until its agent answered."""
        from qga import QgaError
        key = "n%d" % node
        if not (0 <= node < self.nodes):
            raise ValueError("no node %d" % node)
        if key in self.pids and self._alive(key, self.marker):
            raise ClusterError("node %d is running (kill_node first)" % node)
        if self.detach:
            raise ClusterError("start_node: only from the process that booted the cluster")
        t0 = time.monotonic()
        self._popen(key, self.qemu_argv(node), self.qemu_log(node))
        deadline = t0 + (timeout or self.boot_timeout)
        while True:
            self._check_proc(node)
            try:
                self.qga(node).wait_ready(min(1.0, max(0.1, deadline - time.monotonic())))
                break
            except (QgaError, OSError) as e:
                if time.monotonic() >= deadline:
                    raise ClusterError("node %d did not answer %.0f s after its restart (%s); "
                                       "console:\n%s" % (node, deadline - t0, e,
                                                         self.console_tail(node, 30)))
        secs = round(time.monotonic() - t0, 2)
        log("node %d up again in %.1fs (pid %d)" % (node, secs, self.pids[key]))
        return secs

    def _check_proc(self, i):
        p = self.procs.get("n%d" % i)
        if p is not None and p.poll() is not None:
            raise ClusterError("node %d: qemu exited with %s\n--- qemu log:\n%s\n--- console:\n%s"
                               % (i, p.returncode, _tail(self.qemu_log(i), 20),
                                  self.console_tail(i, 30)))

    # ------------------------------------------------------------ the torus
    def nic_paths(self, nic="all"):
        """QOM paths of the NICs a link operation applies to."""
        paths = []
        if nic in ("all", "exanet") and self.use_exanet():
            paths.append("/machine/peripheral/exa0")
        if nic in ("all", "extoll") and self.extoll:
            paths.append("/machine/peripheral/ext0")
        if not paths:
            raise ValueError("no %s NIC on this cluster" % ("fabric" if nic == "all" else nic))
        return paths

    def fault(self, node, link, actions, nic="all"):
        """Change link `link` (x+ .. z-) of `node` at run time: actions are
        exacluster fault actions (down, up, drop=PPM, corrupt=PPM, mbps=N,
        ns=N).  Everything is checked before anything changes."""
        if not isinstance(node, int) or not 0 <= node < self.nodes:
            raise ValueError("no node %r (0..%d)" % (node, self.nodes - 1))
        if link not in PORTS:
            raise ValueError("unknown link %r (%s)" % (link, ", ".join(PORTS)))
        if isinstance(actions, str):
            actions = [actions]
        if not actions:
            raise ValueError("no fault action")
        sets = [parse_fault_action(a) for a in actions]
        paths = self.nic_paths(nic)
        for path in paths:
            for suffix, value in sets:
                self.qmp(node, "qom-set", {"path": path, "property": "link-%s%s" % (link, suffix),
                                           "value": value})

    def link_info(self, node, link, nic="exanet"):
        """The state and counters of one link port as the device model sees it."""
        path = self.nic_paths(nic)[0]

        def get(prop):
            return self.qmp(node, "qom-get", {"path": path, "property": prop})
        info = {"link": link, "admin": get("link-%s" % link), "state": get("link-%s-state" % link)}
        # keys in snake_case like sysfs and exanetctl (the QOM names have dashes)
        for k in ("mbps", "ns", "drop_ppm", "corrupt_ppm"):
            info[k] = get("link-%s-%s" % (link, k.replace("_", "-")))
        for kv in get("link-%s-counters" % link).split():
            k, _, v = kv.partition("=")
            info[k] = int(v)
        return info

    def rx_hops(self, node, nic="exanet"):
        """Packets delivered to node by hop count (list of 16)."""
        path = self.nic_paths(nic)[0]
        return [int(x) for x in self.qmp(node, "qom-get", {"path": path,
                                                         "property": "rx-hops"}).split()]

    def coords(self, node):
        n = int(node)
        x, y, _ = self.torus
        return (n % x, n // x % y, n // (x * y))

    def hops(self, a, b):
        """Hops of the dimension-order route from node a to node b."""
        ca, cb = self.coords(a), self.coords(b)
        h = 0
        for d in range(3):
            fwd = (cb[d] - ca[d]) % self.torus[d]
            h += min(fwd, self.torus[d] - fwd)
        return h

    def route(self, a, b):
        """The dimension-order route from node a to node b with every cable
        up (Documentation/fabric.md, section 2): [(node, port)] of the hops,
        x then y then z, the shorter way round, ties the + way."""
        cur, hops = list(self.coords(a)), []
        cb = self.coords(b)
        for d, name in enumerate("xyz"):
            size = self.torus[d]
            fwd = (cb[d] - cur[d]) % size
            step, sign = (1, "+") if fwd <= size - fwd else (-1, "-")
            for _ in range(min(fwd, size - fwd)):
                x, y, z = cur
                hops.append((x + self.torus[0] * (y + self.torus[1] * z), name + sign))
                cur[d] = (cur[d] + step) % size
        return hops

    def qmp(self, node, execute, arguments=None, timeout=10):
        """One QMP command on node's QEMU; returns the "return" value."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(self._sock("n%d.qmp" % node))
            f = s.makefile("rwb")

            def call(cmd, args=None):
                msg = {"execute": cmd}
                if args:
                    msg["arguments"] = args
                f.write(json.dumps(msg).encode() + b"\n")
                f.flush()
                while True:
                    line = f.readline()
                    if not line:
                        raise ClusterError("node %d: QMP connection closed" % node)
                    r = json.loads(line)
                    if "return" in r:
                        return r["return"]
                    if "error" in r:
                        raise ClusterError("node %d: QMP %s: %s" % (node, cmd, r["error"]))
            f.readline()                        # greeting
            call("qmp_capabilities")
            return call(execute, arguments)
        except (OSError, ValueError) as e:
            raise ClusterError("node %d: QMP failed: %s" % (node, e)) from e
        finally:
            s.close()

    def diagnose(self, node, keys="wl", lines=80):
        """For a node whose agent stopped answering: magic SysRq through the
        emulated keyboard (w = blocked tasks, l = CPU backtraces, t = all
        tasks, m = memory), then the console tail, which receives the dump."""
        notes = []
        p = self.procs.get("n%d" % node)
        if p is not None and p.poll() is not None:
            notes.append("qemu exited with %s" % p.returncode)
        else:
            for k in keys:
                try:
                    self.qmp(node, "human-monitor-command",
                             {"command-line": "sendkey alt-sysrq-%s" % k})
                except ClusterError as e:
                    notes.append(str(e))
                    break
            time.sleep(2.0)
        return "\n".join(notes + [self.console_tail(node, lines)])

    def console_tail(self, node, lines=40):
        return _tail(self.console_log(node), lines)

    # -------------------------------------------------------------- commands
    def run(self, node, cmd, timeout=60, check=False, env=None, cwd=None, grace=None,
            stream=None):
        """Run `cmd` with sh on `node`; returns RunResult (rc, output).

        stream: a binary file (e.g. sys.stdout.buffer) that gets the output
        while the command runs (read from the node about every STREAM_EVERY
        seconds), and the rest of it when it ends; the result still holds
        all of it.

        timeout: seconds (node-side SIGKILL of the command's process group;
        rc is then TIMEOUT_RC and .timed_out is True); 0/None = no limit.
        AgentTimeout if no answer within timeout + grace seconds (default
        $EXACLUSTER_AGENT_GRACE or 60).
        """
        if not (0 <= node < self.nodes):
            raise ValueError("no node %d" % node)
        pre = ""
        if env:
            pre += "".join("export %s=%s\n" % (k, shlex.quote(str(v))) for k, v in env.items())
        if cwd:
            pre += "cd %s || exit 126\n" % shlex.quote(cwd)
        t0 = time.monotonic()
        if grace is None:
            grace = float(os.environ.get("EXACLUSTER_AGENT_GRACE", "60"))
        rc, out, tmo = self._run_qga(node, cmd, pre, timeout, grace, stream)
        if tmo:
            rc = TIMEOUT_RC
        r = RunResult(rc, out, tmo, node, time.monotonic() - t0)
        if check and rc != 0:
            raise ClusterError("node %d: %r failed (rc %d):\n%s" % (node, cmd, rc, out))
        return r

    # The outer shell of a command run through qemu-ga: the command's output
    # goes to a file, not to qemu-ga's pipe, so that a daemon it starts
    # (which keeps its stdout) does not hold the command open; the shell
    # hands the file over when the command ends.
    QGA_WRAPPER = ('f=/run/exacmd-$1; exec 3>&1 >"$f" 2>&1 </dev/null; '
                   'sh -c "$2" 3>&-; rc=$?; cat "$f" >&3; rm -f "$f"; exit $rc')

    STREAM_EVERY = 0.5      # s between reads of a streamed command's output
    STREAM_CHUNK = 1 << 16  # bytes per guest-file-read

    class _OutputTail:
        """Copies what a running command wrote to its output file on the
        node (QGA_WRAPPER) to a host file, through qemu-ga's file calls."""

        def __init__(self, q, path, sink):
            self.q, self.path, self.sink = q, path, sink
            self.handle, self.sent, self.next = None, 0, 0.0

        def poll(self):
            now = time.monotonic()
            if now < self.next:
                return
            self.next = now + Cluster.STREAM_EVERY
            from qga import QgaError
            try:
                if self.handle is None:
                    self.handle = self.q.call("guest-file-open",
                                              {"path": self.path, "mode": "r"}, 30)
                while True:
                    r = self.q.call("guest-file-read", {"handle": self.handle,
                                                        "count": Cluster.STREAM_CHUNK}, 30)
                    data = base64.b64decode(r.get("buf-b64", ""))
                    if data:
                        self.sink.write(data)
                        self.sink.flush()
                        self.sent += len(data)
                    if len(data) < Cluster.STREAM_CHUNK:
                        break
            except QgaError:
                pass    # not created yet, or already handed over and removed

        def close(self):
            if self.handle is not None:
                try:
                    self.q.call("guest-file-close", {"handle": self.handle}, 30)
                except Exception:   # the agent's file table goes with the node
                    pass

    def _run_qga(self, node, cmd, pre, timeout, grace, stream=None):
        """Cluster.run's (rc, output, timed out) through qemu-ga: sh in a session of its own (setsid: the group
        killed on timeout, the output so far kept), stdin from /dev/null,
        stderr into stdout in order, /etc/exa-node's variables, cwd /."""
        q = self.qga(node)
        from qga import QgaError, QgaTimeout
        tag = "%d-%d-%d" % (os.getpid(), threading.get_ident() % 100000, next(self._qga_seq))
        script = ("[ -f /etc/exa-node ] && . /etc/exa-node\nexport EXA_NODE EXA_IP\ncd /\n"
                  + pre + cmd)
        tail = self._OutputTail(q, "/run/exacmd-" + tag, stream) if stream else None
        try:
            rc, out, _, tmo = q.run(
                cmd, timeout=timeout, kill_group=True, grace=grace,
                argv=["/usr/bin/setsid", "/bin/sh", "-c", self.QGA_WRAPPER, "sh", tag, script],
                on_poll=tail.poll if tail else None)
            if tmo:     # the shell was killed before it handed the output over
                out = q.run("cat /run/exacmd-%s; rm -f /run/exacmd-%s" % (tag, tag),
                            timeout=30)[1]
        except QgaTimeout as e:
            raise AgentTimeout("node %d: %s" % (node, e)) from e
        except (QgaError, OSError) as e:
            raise ClusterError("node %d: qemu-ga: %s" % (node, e)) from e
        finally:
            if tail:
                tail.close()
        if tail:    # the output file holds exactly what the result holds
            stream.write(out.encode("utf-8", "replace")[tail.sent:])
            stream.flush()
        return rc, out, tmo

    def run_all(self, cmds, timeout=60, nodes=None, env=None, cwd=None,
                on_done=None):
        """Run commands in parallel.  cmds: a string (same on every node of
        `nodes`, default all), a list (cmds[i] on node i) or a dict
        {node: cmd}.  env may be a dict or a callable(node) -> dict.
        on_done(node, result), if given, is called as soon as that node's
        command ended (from its thread), before the others end.
        Returns a list of RunResult in node order (dict input: a dict).
        Host-side errors of a node are returned as rc -1 with the message."""
        if isinstance(cmds, str):
            job = {i: cmds for i in (nodes if nodes is not None else range(self.nodes))}
        elif isinstance(cmds, dict):
            job = dict(cmds)
        else:
            job = dict(enumerate(cmds))
        res = {}

        def one(i):
            e = env(i) if callable(env) else env
            try:
                res[i] = self.run(i, job[i], timeout=timeout, env=e, cwd=cwd)
            except ClusterError as ex:
                res[i] = RunResult(-1, "exacluster: %s\n" % ex, isinstance(ex, AgentTimeout), i)
            if on_done:
                on_done(i, res[i])
        th = [threading.Thread(target=one, args=(i,), daemon=True) for i in job]
        for t in th:
            t.start()
        for t in th:
            t.join()
        if isinstance(cmds, dict):
            return res
        return [res[i] for i in sorted(res)]

    def qga(self, node):
        """The node's qemu-guest-agent client (tools/cluster/qga.py):
        .run(cmd, timeout) -> (rc, output, seconds), .call(command, args)."""
        if not (0 <= node < self.nodes):
            raise ValueError("no node %d" % node)
        if node not in self.qga_clients:
            self.qga_clients[node] = QgaClient(port_sockets(self.sockdir, node), node)
        return self.qga_clients[node]

    def freeze(self, node, seconds):
        """Stop node's whole QEMU process (vCPUs and fabric threads) for a while."""
        pid = self.pids["n%d" % node]
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)

    def spawn(self, node, cmd, log_path=None):
        """Start `cmd` in the background on node; returns (guest pid, log path)."""
        log_path = log_path or "/tmp/spawn-%d.log" % int(time.time() * 1000)
        r = self.run(node, "setsid sh -c %s > %s 2>&1 < /dev/null & echo $!"
                     % (shlex.quote(cmd), shlex.quote(log_path)), timeout=30, check=True)
        return int(r.output.split()[-1]), log_path

    PUT_CHUNK = 1 << 20     # bytes per guest-file-write (its JSON stays small)

    def put_file(self, node, path, data, mode=0o644):
        """Write data (bytes or str) to path on node through qemu-ga's file
        calls (no size limit of a command line), then chmod it."""
        if isinstance(data, str):
            data = data.encode()
        from qga import QgaError, QgaTimeout
        q = self.qga(node)
        tmp = "%s.exacluster-put" % path
        try:
            h = q.call("guest-file-open", {"path": tmp, "mode": "w"}, 30)
            try:
                for off in range(0, max(len(data), 1), self.PUT_CHUNK):
                    chunk = data[off:off + self.PUT_CHUNK]
                    if chunk:
                        q.call("guest-file-write", {"handle": h, "buf-b64":
                                                    base64.b64encode(chunk).decode()}, 60)
            finally:
                q.call("guest-file-close", {"handle": h}, 30)
        except (QgaError, QgaTimeout, OSError) as e:
            raise ClusterError("node %d: cannot write %s: %s" % (node, path, e)) from e
        self.run(node, "chmod %o %s && mv -f %s %s" % (mode, shlex.quote(tmp), shlex.quote(tmp),
                                                       shlex.quote(path)), timeout=60, check=True)

    def put(self, nodes, sources, dest):
        """Copy host files to every node of `nodes`: one source to a path or
        into an existing directory (dest ending in '/'), several into the
        directory dest (created).  The mode's execute bits are kept."""
        if len(sources) > 1 and not dest.endswith("/"):
            dest += "/"
        files = []
        for src in sources:
            if not os.path.isfile(src):
                raise ValueError("%s: not a regular file" % src)
            target = dest + os.path.basename(src) if dest.endswith("/") else dest
            with open(src, "rb") as f:
                files.append((target, f.read(), 0o755 if os.access(src, os.X_OK) else 0o644))
        for n in nodes:
            if not 0 <= n < self.nodes:
                raise ValueError("no node %d (0..%d)" % (n, self.nodes - 1))
            if dest.endswith("/"):
                self.run(n, "mkdir -p %s" % shlex.quote(dest), timeout=30, check=True)
            for target, data, mode in files:
                self.put_file(n, target, data, mode)
        return [t for t, _, _ in files]

    def get_file(self, node, path):
        r = self.run(node, "base64 %s" % shlex.quote(path), timeout=60, check=True)
        return base64.b64decode("".join(r.output.split()))

    def dmesg(self, node, lines=40, timeout=20):
        try:
            return self.run(node, "dmesg | tail -n %d" % lines, timeout=timeout).output
        except ClusterError as e:
            return "(no dmesg: %s)\n--- console tail:\n%s" % (e, self.console_tail(node, lines))

    def alive(self, node, timeout=15):
        key = "n%d" % node
        p = self.procs.get(key)
        if p is not None and p.poll() is not None:
            return False
        if p is None and not pid_alive(self.pids.get(key, 0) or -1):
            return False
        try:
            return self.run(node, "true", timeout=timeout).rc == 0
        except ClusterError:
            return False

    # -------------------------------------------------------------- teardown
    def close(self, poweroff=True):
        """Power off (qemu-ga), then SIGTERM/SIGKILL exactly the recorded PIDs."""
        if self.closed or not self.started:
            self.closed = True
            return
        self.closed = True
        main = threading.current_thread() is threading.main_thread()
        old_int = None
        if main:
            try:
                old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
            except (ValueError, OSError):
                old_int = None
        try:
            self._teardown(poweroff)
        finally:
            if old_int is not None:
                signal.signal(signal.SIGINT, old_int)
            self._restore_signals()
            with _live_lock:
                if self in _live:
                    _live.remove(self)

    def _node_keys(self):
        return [k for k in self.pids if k.startswith("n")]

    def _teardown(self, poweroff):
        marker = self.marker
        if self.qga_keeper is not None:
            self.qga_keeper.stop()
            self.qga_keeper = None
        if "keeper" in self.pids:
            # first, so that the power-off below finds a free port at once
            if self._alive("keeper", marker):
                self._signal("keeper", signal.SIGTERM)
                self._wait_exit(["keeper"], marker, 2.0)
        nodes = [k for k in self._node_keys() if self._alive(k, marker)]
        if poweroff and nodes:
            self._poweroff([int(k[1:]) for k in nodes])
            self._wait_exit(nodes, marker, 10.0)
        for q in self.qga_clients.values():
            q.close()
        left = [k for k in self.pids if self._alive(k, marker)]
        for k in left:
            self._signal(k, signal.SIGTERM)
        self._wait_exit(left, marker, 5.0)
        for k in [k for k in self.pids if self._alive(k, marker)]:
            log("%s (pid %d) ignored SIGTERM, killing" % (k, self.pids[k]))
            self._signal(k, signal.SIGKILL)
        self._wait_exit(list(self.pids), marker, 5.0)
        for p in self.procs.values():
            try:
                p.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self.pids = {k: p for k, p in self.pids.items() if self._alive(k, marker)}
        if self.sockdir:
            for fn in os.listdir(self.sockdir) if os.path.isdir(self.sockdir) else []:
                if fn.endswith((".qmp", ".net", ".lock")) or re.search(r"\.qga\d*$", fn):
                    try:
                        os.unlink(os.path.join(self.sockdir, fn))
                    except OSError:
                        pass
            self._write_state()
            if self.sockdir != self.rundir:
                _cleanup_sockdir({"sockdir": self.sockdir, "rundir": self.rundir})

    def _poweroff(self, nodes):
        """Ask each node's qemu-ga to run poweroff (busybox: init's shutdown
        actions, then the ACPI power-off), all at once; a node that does not
        answer within 5 s is left to the signals that follow."""
        from qga import QgaError

        def one(i):
            try:
                self.qga(i).call("guest-exec", {"path": "/bin/sh", "arg": ["-c", "poweroff"]},
                                 timeout=5)
            except (QgaError, OSError):
                pass
        th = [threading.Thread(target=one, args=(i,), daemon=True) for i in nodes]
        for t in th:
            t.start()
        for t in th:
            t.join(6)

    def _alive(self, key, marker):
        p = self.procs.get(key)
        if p is not None:
            return p.poll() is None
        return pid_is_ours(self.pids[key], marker)

    def _signal(self, key, sig):
        p = self.procs.get(key)
        try:
            if p is not None:
                if p.poll() is None:
                    p.send_signal(sig)
            elif pid_is_ours(self.pids[key], self.marker):
                os.kill(self.pids[key], sig)
        except ProcessLookupError:
            pass

    def _wait_exit(self, keys, marker, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end and any(self._alive(k, marker) for k in keys):
            time.sleep(0.1)

    # ----------------------------------------------------------- attach (CLI)
    @classmethod
    def attach(cls, name=None, workdir=None):
        """Attach to a running (detached) cluster started by `exacluster up`."""
        rundir = os.path.abspath(workdir or os.path.join(BUILD, "cluster", name or "default"))
        try:
            with open(os.path.join(rundir, "state.json")) as f:
                st = json.load(f)
        except OSError as e:
            raise ClusterError("no cluster in %s (exacluster up)" % rundir) from e
        c = cls.__new__(cls)
        c.__init__(nodes=st["nodes"], name=st["name"], workdir=rundir, qemu=st["qemu"],
                   kernel=st["kernel"], initrd=st["initrd"], detach=True,
                   trace=st.get("trace") or [], extoll=st.get("extoll", False),
                   share=st.get("share"),
                   exanet=st.get("exanet", "auto"), torus=st.get("torus"))
        c.sockdir = st["sockdir"]
        c.pids = {k: int(v) for k, v in st["pids"].items()}
        c.boot_times = st.get("boot_times", [])
        c.started = True
        c.attached = True
        return c

    def release_agents(self):
        """Give the nodes' agent ports back to other processes."""
        for q in self.qga_clients.values():
            q.close()


MPI_PROVIDERS = ("exanet", "extoll")


def mpirun_command(argv, per_node=1, nodes=2, provider=None):
    """mpirun as root on node 0 over nodes 0..nodes-1 (see Cluster.mpirun_command)."""
    hosts = ",".join("%s:%d" % (Cluster.node_ip(i), per_node) for i in range(nodes))
    if provider is not None and provider not in MPI_PROVIDERS:
        raise ValueError("provider %r: one of %s" % (provider, ", ".join(MPI_PROVIDERS)))
    # the ofi MTL's provider, which the image's MCA file sets to exanet
    mca = "--mca mtl_ofi_provider_include %s " % provider if provider else ""
    return ("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --host %s -np %d %s%s"
            % (hosts, per_node * nodes, mca, " ".join(shlex.quote(x) for x in argv)))


def _cleanup_sockdir(st):
    sd = st.get("sockdir")
    rd = st.get("rundir")
    if sd and rd and sd != rd and os.path.basename(sd).startswith("exac-"):
        import shutil
        shutil.rmtree(sd, ignore_errors=True)
        try:
            os.unlink(os.path.join(rd, "sock"))
        except OSError:
            pass


def _tail(path, lines):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 65536))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no %s)" % path
    return "\n".join(data.splitlines()[-lines:])


# ------------------------------------------------------------------- CLI
def _say_timeout(r, what, timeout):
    """A command the node-side timeout ended: say so (its exit code alone,
    TIMEOUT_RC, reads like the command's own)."""
    if r.timed_out:
        sys.stdout.flush()
        print("exacluster: %s: killed after --timeout %g s (exit %d)" % (what, timeout, r.rc),
              file=sys.stderr)


def _cli(argv=None):
    import argparse
    # every EXACLUSTER_* variable read here (exacluster(1) says the same;
    # selftests/host/test_manpages.sh checks both)
    env_help = """environment (an option given wins over its variable):
  EXACLUSTER_NAME          cluster of the subcommands' --name (default: default)
  EXACLUSTER_QEMU          the emulator (default: build/qemu-system-x86_64, else PATH)
  EXACLUSTER_FIRMWARE      QEMU's firmware directory (-L)
  EXACLUSTER_KERNEL        guest kernel (default: /boot/vmlinuz-KVER)
  EXACLUSTER_INITRD        node image (default: build/initramfs.cpio.gz); up --initrd
  EXACLUSTER_PVH=0         boot the bzImage, not the unpacked PVH vmlinux
  EXACLUSTER_ACCEL         tcg (default) or kvm; up --accel
  EXACLUSTER_BOOT_TIMEOUT  seconds for the nodes to boot; up --boot-timeout
  EXACLUSTER_TORUS         torus shape XxYxZ; up --torus
  EXACLUSTER_EXANET=0|1    without / with the exanet device (default: when QEMU has it)
  EXACLUSTER_EXTOLL=1      add the extoll device; up --extoll
  EXACLUSTER_IOMMU=0|1     without / with the IOMMU (default: with RDMA contexts)
  EXACLUSTER_RDMA_RANKS    RDMA context functions per node (default 8)
  EXACLUSTER_DIRECT        direct delivery on|off; up --direct
  EXACLUSTER_POLL_YIELD    poll parking on|off; up --poll-yield
  EXACLUSTER_RX_SPIN_US    receive thread spin; up --rx-spin-us
  EXACLUSTER_SHARE         host directory mounted at /share; up --share
  EXACLUSTER_TRACE         comma-separated QEMU trace patterns; up --trace
  EXACLUSTER_AGENT_GRACE   seconds past --timeout to wait for a node's agent (60)
  EXACLUSTER_QUIET=1       no progress messages on stderr
  EXACLUSTER_STALE_IMAGE_OK=1  let run-tests and the device-model scripts boot a
                           build/initramfs.cpio.gz older than its inputs (check-image)"""
    ap = argparse.ArgumentParser(prog="exacluster",
                                 description="Emulated ExaNet cluster launcher "
                                             "(see Documentation/cluster.md)",
                                 epilog=env_help,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version="%(prog)s " + project_version())
    sub = ap.add_subparsers(dest="cmd", required=True)
    # EXACLUSTER_NAME: the cluster a shell session works on (a test running
    # documented command lines keeps clear of a user's "default" one)
    default_name = os.environ.get("EXACLUSTER_NAME") or "default"
    name_help = "the cluster (default %s: EXACLUSTER_NAME, else default)" % default_name
    up = sub.add_parser("up", help="boot N nodes and leave them running")
    up.add_argument("-n", "--nodes", type=int, default=2, help="number of nodes (default 2)")
    up.add_argument("--name", default=default_name, help=name_help)
    up.add_argument("--qemu", metavar="PATH",
                    help="the emulator (default: EXACLUSTER_QEMU, else build/qemu-system-x86_64, "
                         "else the one on PATH)")
    up.add_argument("--initrd", metavar="PATH",
                    help="the node image (default: EXACLUSTER_INITRD, else "
                         "build/initramfs.cpio.gz)")
    up.add_argument("--iommu", action="store_true",
                    help="add intel-iommu,aw-bits=48 (default: when the nodes have RDMA contexts)")
    up.add_argument("--ip", nargs="?", const="default",
                    choices=["default", "busy", "sleep", "irq"],
                    help="start exanet-ipd (IP over the fabric, exa0 = 10.43.0.<node+1>) "
                         "in this mode at boot (default: the daemon's, irq or sleep)")
    up.add_argument("--no-exanet", action="store_true", help="omit the exanet device")
    up.add_argument("--extoll", action="store_true", help="add the extoll device (EXTOLL NIC)")
    up.add_argument("--accel", help="tcg (default) or kvm")
    up.add_argument("--memory", default="512M", help="guest RAM per node (default 512M)")
    up.add_argument("--smp", type=int, default=1, help="vCPUs per node (default 1)")
    up.add_argument("--append", default="", help="extra kernel command line")
    up.add_argument("--device-arg", action="append", default=[],
                    help="extra QEMU argument ({node} {nodes} {fabric} are substituted)")
    up.add_argument("--boot-timeout", type=float, metavar="SEC",
                    help="seconds to wait for every node's agent (default: "
                         "EXACLUSTER_BOOT_TIMEOUT, else 120 + 45 per node)")
    up.add_argument("--poll-yield", choices=["on", "off"],
                    help="park a vCPU that keeps polling an empty NI (device property "
                         "poll-yield; default: on when the nodes outnumber the host's cores)")
    up.add_argument("--direct", choices=["on", "off"],
                    help="direct delivery: the sender's NI writes into the target's guest "
                         "memory (shared guest RAM; default on, EXACLUSTER_DIRECT); off: "
                         "every message takes the fabric rings")
    up.add_argument("--rx-spin-us", type=int,
                    help="the fabric receive thread looks for more traffic this long after "
                         "a wake-up (device property rx-spin-us, 0..1000; default 0)")
    up.add_argument("--torus", metavar="XxYxZ",
                    help="torus shape, X*Y*Z = -n (default: the most cube-like shape, "
                         "Documentation/fabric.md)")
    up.add_argument("--link-mbps", type=int, help="rate of every link in Mb/s (default unlimited)")
    up.add_argument("--link-ns", type=int, help="latency of every hop in ns (default 300)")
    up.add_argument("--share", metavar="DIR",
                    help="mount host directory DIR read-write at %s on every node "
                         "(virtio-9p): programs built on the host run there without an "
                         "image rebuild (EXACLUSTER_SHARE)" % SHARE_MOUNT)
    up.add_argument("--trace", action="append", default=[], metavar="PATTERN",
                    help="enable QEMU trace events matching PATTERN (e.g. 'exanet_*'; "
                         "repeatable); node i writes them to <rundir>/n<i>.trace")
    rn = sub.add_parser("run", help="run a shell command on node(s)")
    rn.add_argument("--name", default=default_name, help=name_help)
    g = rn.add_mutually_exclusive_group()
    g.add_argument("--node", type=int, default=0, help="the node (default 0)")
    g.add_argument("--all", action="store_true", help="every node at once, output per node")
    rn.add_argument("--timeout", type=float, default=60,
                    help="seconds before the command is killed on the node (exit %d; "
                         "default 60)" % TIMEOUT_RC)
    rn.add_argument("command", nargs=argparse.REMAINDER,
                    help="[--] the shell command (several words are quoted and joined)")
    mp = sub.add_parser("mpirun", help="run an MPI program from node 0 on the nodes "
                        "(Open MPI over the exanet provider, launched through ssh)")
    mp.add_argument("--name", default=default_name, help=name_help)
    mp.add_argument("-N", "--per-node", type=int, default=1, help="ranks per node")
    mp.add_argument("--nodes", type=int, help="use nodes 0..K-1 (default: all)")
    mp.add_argument("--timeout", type=float, default=300,
                    help="seconds before mpirun is killed (exit %d; default 300)" % TIMEOUT_RC)
    mp.add_argument("--provider", choices=MPI_PROVIDERS,
                    help="libfabric provider of Open MPI's ofi MTL (default: the image's, "
                         "exanet; extoll needs a cluster up with --extoll)")
    mp.add_argument("args", nargs=argparse.REMAINDER,
                    help="[--] [mpirun options] program [arguments]")
    pu = sub.add_parser("put", aliases=["cp"],
                        help="copy host files onto node(s) (qemu-ga; no image "
                        "rebuild): exacluster put|cp [--all|--node N] FILE... DEST")
    pu.add_argument("--name", default=default_name, help=name_help)
    g = pu.add_mutually_exclusive_group()
    g.add_argument("--node", type=int, default=0, help="the node (default 0)")
    g.add_argument("--all", action="store_true", help="every node")
    pu.add_argument("files", nargs="+", metavar="FILE",
                    help="host files, then the node's destination path (a directory "
                         "when it ends in / or when several files are given)")
    dn = sub.add_parser("down", help="power off and kill a cluster's processes")
    dn.add_argument("--name", default=default_name, help=name_help)
    fl = sub.add_parser("fault", help="change a link of a running cluster: "
                        "down, up, drop=PPM, corrupt=PPM, mbps=N, ns=N")
    fl.add_argument("--name", default=default_name, help=name_help)
    fl.add_argument("--node", type=int, required=True, help="the node whose link changes")
    fl.add_argument("--link", required=True, help="x+, x-, y+, y-, z+ or z-")
    fl.add_argument("--nic", choices=["all", "exanet", "extoll"], default="all",
                    help="the NIC whose link changes (default all)")
    fl.add_argument("actions", nargs="+", metavar="ACTION",
                    help="down, up, drop=PPM, corrupt=PPM (0..1000000), mbps=N, ns=N")
    lk = sub.add_parser("links", help="show a node's links as the device model sees them")
    lk.add_argument("--name", default=default_name, help=name_help)
    lk.add_argument("--node", type=int, default=0, help="the node (default 0)")
    lk.add_argument("--nic", choices=["exanet", "extoll"], default="exanet",
                    help="the NIC (default exanet)")
    lk.add_argument("--json", action="store_true", help="one JSON object on stdout")
    st = sub.add_parser("status", help="list clusters and their processes")
    st.add_argument("--name", help="only this cluster (default: every cluster in build/cluster)")
    ci_help = ("exit 2 with one line on stderr when build/initramfs.cpio.gz is older "
               "than the build outputs it packs (`%s` rebuilds it)" % REBUILD_IMAGE)
    sub.add_parser("check-image", help=ci_help,
                   description=ci_help + "; what run-tests and the device-model scripts "
                   "check before booting it (%s=1: they boot it anyway)" % STALE_IMAGE_OK)
    co = sub.add_parser("console", help="print the tail of a node's console log")
    co.add_argument("--name", default=default_name, help=name_help)
    co.add_argument("--node", type=int, default=0, help="the node (default 0)")
    # -n: kept for old command lines; it is --nodes for `up`, hence --lines
    co.add_argument("--lines", "-n", type=int, default=50,
                    help="how many lines of the log's end (default 50; -n is an alias)")
    a = ap.parse_args(argv)

    try:
        if a.cmd == "up":
            if any("," in t or "=" in t for t in a.trace):
                ap.error("--trace takes one event pattern (no ',' or '='); repeat it for more")
            append = a.append
            if a.ip:
                append = (append + " exacluster.ip=%s" % a.ip).strip()
            c = Cluster(nodes=a.nodes, name=a.name, qemu=a.qemu, initrd=a.initrd,
                        iommu=True if a.iommu else "auto",
                        exanet=False if a.no_exanet else "auto",
                        extoll=a.extoll,
                        accel=a.accel, memory=a.memory, smp=a.smp, append=append,
                        extra_device_args=a.device_arg, boot_timeout=a.boot_timeout,
                        detach=True, trace=a.trace,
                        poll_yield=None if a.poll_yield is None else a.poll_yield == "on",
                        rx_spin_us=a.rx_spin_us,
                        direct=None if a.direct is None else a.direct == "on",
                        torus=a.torus, link_mbps=a.link_mbps, link_ns=a.link_ns,
                        share=a.share)
            try:
                c.start()
            except KeyboardInterrupt:
                c.close()
                return 130
            c.release_agents()
            print("cluster %s: %d node(s) up in %s (boot %s s); IPs %s"
                  % (c.name, c.nodes, c.rundir, c.boot_times, c.peers()))
            if c.share:
                print("%s on the host is %s on every node" % (c.share, SHARE_MOUNT))
            if c.trace:
                print("trace events %s -> %s" % (",".join(c.trace),
                                                 " ".join(c.trace_log(i) for i in range(c.nodes))))
            return 0
        if a.cmd == "run":
            cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
            if not cmd:
                ap.error("run: missing command")
            cmd = cmd[0] if len(cmd) == 1 else " ".join(shlex.quote(x) for x in cmd)
            c = Cluster.attach(a.name)
            nodes = list(range(c.nodes)) if a.all else [a.node]
            if any(not 0 <= i < c.nodes for i in nodes):
                ap.error("no such node")
            worst = 0
            if a.all:
                res = c.run_all({i: cmd for i in nodes}, timeout=a.timeout)
                for i in nodes:
                    r = res[i]
                    print("=== node%d rc=%d%s" % (i, r.rc, " (timeout)" if r.timed_out else ""))
                    sys.stdout.write(r.output)
                    _say_timeout(r, "node%d" % i, a.timeout)
                    worst = worst or (r.rc & 0xff if r.rc >= 0 else 1)
            else:
                sys.stdout.flush()
                r = c.run(a.node, cmd, timeout=a.timeout, stream=sys.stdout.buffer)
                worst = r.rc & 0xff if r.rc >= 0 else 1
                _say_timeout(r, "node%d" % a.node, a.timeout)
            c.release_agents()
            return worst
        if a.cmd == "mpirun":
            args = a.args[1:] if a.args[:1] == ["--"] else a.args
            if not args:
                ap.error("mpirun: missing program")
            c = Cluster.attach(a.name)
            if a.per_node < 1 or not 1 <= (a.nodes or c.nodes) <= c.nodes:
                ap.error("mpirun: bad --per-node or --nodes")
            sys.stdout.flush()
            r = c.run(0, c.mpirun_command(args, a.per_node, a.nodes, a.provider),
                      timeout=a.timeout, stream=sys.stdout.buffer)
            _say_timeout(r, "mpirun", a.timeout)
            c.release_agents()
            return r.rc & 0xff if r.rc >= 0 else 1
        if a.cmd in ("put", "cp"):
            if len(a.files) < 2:
                ap.error("put: need FILE... DEST")
            c = Cluster.attach(a.name)
            nodes = list(range(c.nodes)) if a.all else [a.node]
            done = c.put(nodes, a.files[:-1], a.files[-1])
            c.release_agents()
            print("node(s) %s: %s" % (",".join(map(str, nodes)), " ".join(done)))
            return 0
        if a.cmd == "fault":
            c = Cluster.attach(a.name)
            c.fault(a.node, a.link, a.actions, nic=a.nic)
            return 0
        if a.cmd == "links":
            c = Cluster.attach(a.name)
            if not 0 <= a.node < c.nodes:
                raise ValueError("no node %d (0..%d)" % (a.node, c.nodes - 1))
            rows = [c.link_info(a.node, p, nic=a.nic) for p in PORTS]
            if a.json:
                print(json.dumps({"node": a.node, "torus": "x".join(map(str, c.torus)),
                                  "coords": c.coords(a.node), "links": rows}, indent=1))
                return 0
            print("node %d at %s of torus %s" % (a.node, ",".join(map(str, c.coords(a.node))),
                                                 "x".join(map(str, c.torus))))
            cols = ("link", "state", "admin", "peer", "mbps", "ns", "drop_ppm", "corrupt_ppm",
                    "packets", "bytes", "drops", "crc_errors", "detoured", "down_events")
            # each column as wide as its head or its widest value (at least 8)
            widths = [max([8, len(k)] + [len(str(r.get(k, ""))) for r in rows]) for k in cols]
            print(" ".join("%-*s" % (w, k) for w, k in zip(widths, cols)).rstrip())
            for r in rows:
                print(" ".join("%-*s" % (w, r.get(k, "")) for w, k in zip(widths, cols)).rstrip())
            return 0
        if a.cmd == "down":
            c = Cluster.attach(a.name)
            c.close()
            left = c.pids
            print("cluster %s: down%s" % (c.name, " (still alive: %s)" % left if left else ""))
            return 1 if left else 0
        if a.cmd == "status":
            base = os.path.join(BUILD, "cluster")
            names = [a.name] if a.name else sorted(os.listdir(base)) if os.path.isdir(base) else []
            for n in names:
                try:
                    with open(os.path.join(base, n, "state.json")) as f:
                        s = json.load(f)
                except (OSError, ValueError):
                    continue
                alive = {k: p for k, p in s["pids"].items() if pid_is_ours(p, s["marker"])}
                state = "up" if alive else "down"
                print("%-12s %-5s nodes=%d boot=%s pids=%s dir=%s"
                      % (n, state, s["nodes"], s.get("boot_times"),
                         " ".join("%s:%d" % kv for kv in alive.items()) or "-", s["rundir"]))
            return 0
        if a.cmd == "check-image":
            stale = stale_image()
            if stale:
                print("exacluster: " + stale, file=sys.stderr)
                return 2
            return 0
        if a.cmd == "console":
            rundir = os.path.join(BUILD, "cluster", a.name)
            print(_tail(os.path.join(rundir, "n%d.console" % a.node), a.lines))
            return 0
    except (ClusterError, ValueError) as e:
        print("exacluster: error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
