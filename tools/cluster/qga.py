# SPDX-License-Identifier: GPL-2.0
"""Host-side client of a node's qemu-guest-agent (Documentation/cluster.md,
"The qemu-ga channel").

exacluster gives every node QGA_PORTS virtio-serial ports named
org.qemu.guest_agent.<k>, behind the unix sockets <sockdir>/n<i>.qga (k = 0)
and <sockdir>/n<i>.qga<k>; the node's init runs one qemu-ga on each.
Cluster.qga(node) returns the node's client::

    rc, out, seconds, timed_out = c.qga(0).run("cat /proc/uptime", timeout=30)

QEMU serves one connection per socket at a time, so a client first claims
a port: an exclusive flock(2) on <socket>.lock, held until close().  Two
processes (a test runner and an `exacluster run` beside it) thus use two
ports; a third waits for a free one until its deadline.  A PortKeeper
holds the spare ports while nobody uses them (an unconnected qemu-ga keeps
waking its node): a thread of the process that booted the cluster, or for
a detached cluster a process of its own (`python3 qga.py keep SOCKET...`).
The agent answers
one request at a time, in order, on one connection; the client keeps a
single request outstanding (a lock), so threads may share it.  A request
that times out leaves its answer in flight: the next call first
resynchronises (guest-sync-delimited, whose answer follows a 0xFF byte,
skips everything before it), and reconnects if that fails too.
Python 3 stdlib only.
"""

import base64
import fcntl
import json
import os
import random
import select
import signal
import socket
import sys
import threading
import time

SYNC_SENTINEL = b"\xff"     # precedes guest-sync-delimited's answer; resets the agent's parser
POLL_FIRST = 0.005          # s before the first guest-exec-status of a command
POLL_MAX = 0.1              # s between later polls (grows by POLL_GROWTH; a long
                            # command costs the node ten agent wake-ups a second)
POLL_GROWTH = 1.5
QGA_PORTS = 2               # agent ports per node (exacluster, the node's init)


class QgaError(Exception):
    """The agent refused a command or the connection failed."""


class QgaTimeout(QgaError):
    """No answer before the deadline."""


def try_lock(path):
    """The open file `path` with an exclusive flock, or None if another
    open file holds a flock on it."""
    f = open(path, "a+b")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


class QgaClient:
    """Connection to one of a node's qemu-guest-agent sockets.

    paths: the node's agent sockets (one string: a single port); the client
    claims the first one no other client holds."""

    def __init__(self, paths, node=None):
        self.paths = [paths] if isinstance(paths, str) else list(paths)
        self.path = None        # the claimed port's socket
        self.claim = None       # its open lock file (flock held)
        self.node = node
        self.sock = None
        self.buf = b""
        self.lock = threading.Lock()
        self.synced = False
        self.connects = 0
        self.resyncs = 0        # resynchronisations after a lost answer
        self.reconnects = 0     # connections after the first

    def _where(self):
        return "node %s qga" % self.node if self.node is not None else self.paths[0]

    # ---------------------------------------------------------- connection
    def _claim(self, deadline):
        """Hold a port no other client holds (flock on <socket>.lock).
        While it waits, a shared flock on each <socket>.want asks a
        PortKeeper that holds a spare port idle to let it go."""
        wants = []
        try:
            while self.claim is None:
                for path in self.paths:
                    f = try_lock(path + ".lock")
                    if f is not None:
                        self.path, self.claim = path, f
                        return
                if not wants:
                    for path in self.paths:
                        w = open(path + ".want", "a+b")
                        fcntl.flock(w, fcntl.LOCK_SH)
                        wants.append(w)
                if time.monotonic() >= deadline:
                    raise QgaTimeout("%s: all %d agent ports are held by other clients"
                                     % (self._where(), len(self.paths)))
                time.sleep(0.05)
        finally:
            for w in wants:
                w.close()

    def _release(self):
        f, self.claim = self.claim, None
        if f is not None:
            f.close()           # drops the flock

    def _connect(self, deadline):
        self._close()
        self._claim(deadline)
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                break
            except OSError as e:
                s.close()
                if time.monotonic() >= deadline:
                    raise QgaTimeout("%s: cannot connect to %s: %s"
                                     % (self._where(), self.path, e)) from e
                time.sleep(0.1)
        self.sock = s
        self.buf = b""
        self.synced = False
        self.reconnects += self.connects > 0
        self.connects += 1

    def _close(self):
        s, self.sock = self.sock, None
        if s is not None:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        """Disconnect and give the port back to other clients."""
        with self.lock:
            self._close()
            self._release()

    def _send(self, msg):
        try:
            self.sock.sendall(msg)
        except OSError as e:
            self._close()
            raise QgaError("%s: send failed: %s" % (self._where(), e)) from e

    def _fill(self, deadline):
        """Read more bytes into self.buf; QgaTimeout at the deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise QgaTimeout("%s: no answer" % self._where())
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout as e:
            raise QgaTimeout("%s: no answer" % self._where()) from e
        except OSError as e:
            self._close()
            raise QgaError("%s: receive failed: %s" % (self._where(), e)) from e
        if not data:
            self._close()
            raise QgaError("%s: connection closed" % self._where())
        self.buf += data

    def _read_object(self, deadline):
        """The next JSON object the agent sent."""
        dec = json.JSONDecoder()
        while True:
            text = self.buf.lstrip(b" \t\r\n" + SYNC_SENTINEL)
            if text:
                try:
                    # latin-1: one character per byte, so end is a byte
                    # offset (the agent's JSON is ASCII, data is base64)
                    obj, end = dec.raw_decode(text.decode("latin-1"))
                except ValueError:
                    obj = None      # incomplete: read on
                if obj is not None:
                    self.buf = text[end:]
                    return obj
            self._fill(deadline)

    def _sync(self, deadline):
        """guest-sync-delimited: drop everything up to the 0xFF sentinel
        and every answer before the one carrying our random id."""
        sync_id = random.randrange(1, 2**31)
        self.buf = b""
        self._send(SYNC_SENTINEL + json.dumps(
            {"execute": "guest-sync-delimited", "arguments": {"id": sync_id}}).encode() + b"\n")
        while True:
            k = self.buf.find(SYNC_SENTINEL)
            if k >= 0:
                self.buf = self.buf[k + 1:]
                break
            self.buf = b""
            self._fill(deadline)
        while True:
            obj = self._read_object(deadline)
            if obj.get("return") == sync_id:
                self.synced = True
                return

    def _ensure(self, deadline):
        """Connected and in step with the agent: resync after a lost answer,
        reconnect when the resync itself gets no answer."""
        fresh = self.sock is None
        if fresh:
            self._connect(deadline)
        if self.synced:
            return
        self.resyncs += not fresh
        try:
            self._sync(min(deadline, time.monotonic() + 5.0))
        except QgaError:
            self._connect(deadline)
            self._sync(deadline)

    # ------------------------------------------------------------- requests
    def call(self, execute, arguments=None, timeout=30):
        """One agent command; returns its "return" value."""
        deadline = time.monotonic() + timeout
        msg = {"execute": execute}
        if arguments:
            msg["arguments"] = arguments
        with self.lock:
            self._ensure(deadline)
            self._send(json.dumps(msg).encode() + b"\n")
            try:
                obj = self._read_object(deadline)
            except QgaError:
                self.synced = False     # its answer may still come: resync next time
                raise
        if "error" in obj:
            raise QgaError("%s: %s: %s" % (self._where(), execute, obj["error"].get("desc",
                                                                                   obj["error"])))
        return obj.get("return")

    def wait_ready(self, timeout=60):
        """Wait until the agent answers (it starts late in the boot)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.lock:
                    self.synced = False
                    self._ensure(min(deadline, time.monotonic() + 5.0))
                return
            except QgaError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def run(self, cmd, timeout=60, env=None, argv=None, kill_group=False, grace=60,
            on_poll=None):
        """Run `cmd` with /bin/sh -c on the node (or the program argv):
        (rc, stdout + stderr, seconds, timed_out).  rc is the exit code, or
        -signal.  timeout: seconds, 0/None = no limit.  When it passes:
        with kill_group (the program is `setsid ...`: its pid is its process
        group) the group is SIGKILLed and the result comes with timed_out
        True; without, QgaTimeout (qemu-ga 7.2 has no request that kills
        what it started).  QgaTimeout also when a killed group's exit is not
        seen within grace seconds.  on_poll(), if given, is called after
        each status poll that found the command still running."""
        t0 = time.monotonic()
        deadline = t0 + timeout if timeout else None
        args = {"path": argv[0] if argv else "/bin/sh",
                "arg": list(argv[1:]) if argv else ["-c", cmd], "capture-output": True}
        args["env"] = ["%s=%s" % kv for kv in (env or {
            "PATH": "/usr/sbin:/usr/bin", "HOME": "/root", "TERM": "dumb"}).items()]
        pid = self.call("guest-exec", args, 30)["pid"]
        pause, killed = POLL_FIRST, False
        while True:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                if not kill_group or killed:
                    raise QgaTimeout("%s: %r (pid %d) did not finish in %ss"
                                     % (self._where(), cmd, pid, timeout))
                self.call("guest-exec", {"path": "/usr/bin/kill",
                                         "arg": ["-KILL", "--", "-%d" % pid]}, 30)
                killed, deadline, pause = True, now + grace, POLL_FIRST
                continue
            time.sleep(pause if deadline is None else min(pause, max(0.0, deadline - now)))
            st = self.call("guest-exec-status", {"pid": pid}, 30)
            if st.get("exited"):
                break
            if on_poll:
                on_poll()
            pause = min(POLL_MAX, pause * POLL_GROWTH)
        out = b"".join(base64.b64decode(st.get(k, "")) for k in ("out-data", "err-data"))
        rc = st["exitcode"] if "exitcode" in st else -st.get("signal", 0)
        return rc, out.decode("utf-8", "replace"), time.monotonic() - t0, killed


class PortKeeper:
    """Keeps spare agent ports connected while no client uses them.

    qemu-ga on a virtio-serial port with no host connection polls for one
    ten times a second (qga/main.c), and each poll wakes the node's vCPU.
    The process that boots a cluster therefore holds every spare port
    (socket connected, nothing sent) and lets one go within CHECK seconds
    when a client waits for it (a shared flock on <socket>.want), taking
    it back when that client closes.  A detached cluster runs one in a
    process of its own (keep(), `qga.py keep SOCKET...`).

    thread=False: no thread; run() loops in the caller until stop() or
    until the cluster is gone (gone())."""

    CHECK = 0.2
    GONE_AFTER = 2.0    # s a socket must refuse connections to count as gone

    def __init__(self, paths, thread=True):
        self.held = {p: None for p in paths}     # path -> (lock file, socket)
        self.refused = {}                        # path -> when connects began to fail
        self.stopped = threading.Event()
        self.thread = None
        if thread:
            self.thread = threading.Thread(target=self.run, daemon=True, name="qga-keeper")
            self.thread.start()

    def _waiter(self, path):
        try:
            w = try_lock(path + ".want")
        except OSError:         # its directory is gone
            return False
        if w is None:
            return True
        w.close()
        return False

    def _take(self, path):
        if not os.path.exists(path):
            return
        try:
            f = try_lock(path + ".lock")
        except OSError:
            return
        if f is None:
            self.refused.pop(path, None)    # a client holds it: the port lives
            return
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            s.close()
            f.close()
            self.refused.setdefault(path, time.monotonic())
            return
        self.refused.pop(path, None)
        self.held[path] = (f, s)

    def _drop(self, path):
        f, s = self.held[path]
        self.held[path] = None
        s.close()
        f.close()

    def _hung_up(self, path):
        """The agent's end of a held connection closed (QEMU exited)."""
        s = self.held[path][1]
        try:
            r, _, _ = select.select([s], [], [], 0)
            return bool(r) and not s.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _step(self):
        for path, h in list(self.held.items()):
            if h is None:
                if not self._waiter(path):
                    self._take(path)
            elif self._waiter(path) or self._hung_up(path):
                self._drop(path)

    def gone(self):
        """True when no port is left to keep: every socket file vanished
        (no client can come any more), or refuses connections (its QEMU is
        gone) for GONE_AFTER s."""
        now = time.monotonic()
        return all(not os.path.exists(p) or
                   (h is None and now - self.refused.get(p, now) >= self.GONE_AFTER)
                   for p, h in self.held.items())

    def run(self):
        while not self.stopped.wait(self.CHECK):
            self._step()
            if self.thread is None and self.gone():
                break

    def stop(self):
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(2 * self.CHECK + 1)
        for path, h in self.held.items():
            if h is not None:
                self._drop(path)


def keep(paths):
    """A detached cluster's keeper process: PortKeeper over paths until
    SIGTERM/SIGINT or until the cluster is gone (so a cluster that died
    without `exacluster down` leaves no keeper behind)."""
    k = PortKeeper(paths, thread=False)

    def on_signal(signum, frame):
        k.stopped.set()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        k.run()
    finally:
        k.stop()
    return 0


def port_sockets(sockdir, node, ports=QGA_PORTS):
    """The host sockets of a node's agent ports, port 0 first."""
    return [os.path.join(sockdir, "n%d.qga%s" % (node, k or "")) for k in range(ports)]


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "keep":
        sys.exit("usage: qga.py keep SOCKET...")
    sys.exit(keep(sys.argv[2:]))
