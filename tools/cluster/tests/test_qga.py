#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit test of tools/cluster/qga.py, the cluster's command channel
(TAP): the client against a stand-in for qemu-ga that serves one connection
per socket at a time, as QEMU's socket chardev does, and runs the commands
it is given on the host.  Covers output and exit codes, timeouts with and
without killing the process group, a lost answer (resync), a dropped
connection (reconnect), agent errors, the claiming of agent ports by
several clients, and the port keeper as a thread and as a process."""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(TOP, "tools", "cluster")]
from taplib import check, report  # noqa: E402
from qga import PortKeeper, QgaClient, QgaError, QgaTimeout, port_sockets, try_lock  # noqa: E402
import qga  # noqa: E402
QGA_PY = os.path.abspath(qga.__file__)


class FakeAgent:
    """qemu-ga's JSON protocol on a unix socket, one client at a time."""

    def __init__(self, path):
        self.path = path
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(4)
        self.procs = {}
        self.drop_next = 0      # answers to swallow (a lost answer)
        self.hangup_next = 0    # requests after which the connection is closed
        self.served = 0
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                self._session(conn)

    def _session(self, conn):
        buf = b""
        dec = json.JSONDecoder()
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data.replace(b"\xff", b"")
            while True:
                text = buf.lstrip().decode()
                try:
                    req, end = dec.raw_decode(text)
                except ValueError:
                    break
                buf = text[end:].encode()
                answer = self._answer(req)
                self.served += 1
                if self.hangup_next:
                    self.hangup_next -= 1
                    return
                if self.drop_next and req["execute"] != "guest-sync-delimited":
                    self.drop_next -= 1
                    continue
                conn.sendall(answer)

    def _answer(self, req):
        cmd, args = req["execute"], req.get("arguments", {})
        if cmd == "guest-sync-delimited":
            return b"\xff" + json.dumps({"return": args["id"]}).encode() + b"\n"
        if cmd == "guest-exec":
            env = dict(kv.split("=", 1) for kv in args.get("env", []))
            p = subprocess.Popen([args["path"]] + args.get("arg", []), env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=False)
            out = {}
            threading.Thread(target=lambda: out.update(zip(("o", "e"), p.communicate())),
                             daemon=True).start()
            self.procs[p.pid] = (p, out)
            return json.dumps({"return": {"pid": p.pid}}).encode() + b"\n"
        if cmd == "guest-exec-status":
            p, out = self.procs[args["pid"]]
            if p.poll() is None or "o" not in out:
                return b'{"return": {"exited": false}}\n'
            st = {"exited": True, "out-data": base64.b64encode(out["o"]).decode(),
                  "err-data": base64.b64encode(out["e"]).decode()}
            if p.returncode < 0:
                st["signal"] = -p.returncode
            else:
                st["exitcode"] = p.returncode
            return json.dumps({"return": st}).encode() + b"\n"
        return json.dumps({"error": {"class": "CommandNotFound",
                                     "desc": "The command %s has not been found" % cmd}}
                          ).encode() + b"\n"

    def close(self):
        self.srv.close()
        for p, _ in self.procs.values():
            if p.poll() is None:
                p.kill()


def lock_held(path):
    """True if another open file holds a flock on path."""
    f = try_lock(path)
    if f is None:
        return True
    f.close()
    return False


def wait_for(cond, secs):
    end = time.monotonic() + secs
    while not cond():
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)
    return True


def start_keeper(paths):
    return subprocess.Popen([sys.executable, QGA_PY, "keep"] + list(paths),
                            stdin=subprocess.DEVNULL, start_new_session=True)


def keeper_process(paths, agents):
    """`qga.py keep`: holds every idle port, lets one go to a waiting client
    in another process, takes it back, ends on SIGTERM and when the sockets
    vanish."""
    n0 = [ag.connections for ag in agents]
    kp = start_keeper(paths)
    try:
        held = wait_for(lambda: all(lock_held(p + ".lock") for p in paths), 3)
        check("keeper process holds every idle port (lock and connection)",
              held and wait_for(lambda: [ag.connections for ag in agents] ==
                                [n + 1 for n in n0], 2),
              ([ag.connections for ag in agents], n0))
        b = QgaClient(paths, 0)
        t0 = time.monotonic()
        b.wait_ready(10)
        waited = time.monotonic() - t0
        check("a client gets a port from the keeper process within a second",
              waited < 1.0 and b.run("echo kp", timeout=10)[1] == "kp\n", (b.path, waited))
        c = QgaClient(paths, 0)
        t0 = time.monotonic()
        c.wait_ready(10)
        waited = time.monotonic() - t0
        check("and a second client at once the other port",
              waited < 1.0 and c.path != b.path and c.run("echo kq", timeout=10)[1] == "kq\n",
              (c.path, b.path, waited))
        b.close()
        c.close()
        check("the keeper process takes both ports back when the clients close",
              wait_for(lambda: all(lock_held(p + ".lock") for p in paths), 2) and
              kp.poll() is None)
        kp.send_signal(signal.SIGTERM)
        try:
            rc = kp.wait(3)
        except subprocess.TimeoutExpired:
            rc = None
        check("the keeper process exits on SIGTERM and frees the ports",
              rc == 0 and not any(lock_held(p + ".lock") for p in paths), rc)

        kp = start_keeper(paths)
        wait_for(lambda: all(lock_held(p + ".lock") for p in paths), 3)
        for p in paths:
            os.unlink(p)
        t0 = time.monotonic()
        try:
            rc = kp.wait(5)
        except subprocess.TimeoutExpired:
            rc = None
        check("the keeper process exits by itself when the sockets vanish",
              rc == 0, (rc, time.monotonic() - t0))

        # a socket file that refuses connections: its QEMU was killed
        dead = os.path.join(os.path.dirname(paths[0]), "dead.qga")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(dead)
        s.close()
        kp = start_keeper([dead])
        t0 = time.monotonic()
        try:
            rc = kp.wait(3 + PortKeeper.GONE_AFTER)
        except subprocess.TimeoutExpired:
            rc = None
        check("and when they refuse connections", rc == 0, (rc, time.monotonic() - t0))
    finally:
        if kp.poll() is None:
            kp.kill()
            kp.wait()


def main():
    d = tempfile.mkdtemp(prefix="qgat-")
    paths = port_sockets(d, 0)
    agents = [FakeAgent(p) for p in paths]
    a = QgaClient(paths, 0)
    try:
        a.wait_ready(10)
        check("first client claims port 0", a.path == paths[0])
        rc, out, secs, tmo = a.run("echo out; echo err >&2; exit 3", timeout=10)
        check("exit code, stdout then stderr", (rc, out, tmo) == (3, "out\nerr\n", False),
              repr((rc, out, tmo)))
        rc, out, _, _ = a.run("kill -TERM $$", timeout=10)
        check("death by a signal reads as -signal", rc == -signal.SIGTERM, rc)
        rc, out, _, _ = a.run(None, timeout=10, argv=["/bin/echo", "a b", "c"])
        check("argv runs without a shell", out == "a b c\n", repr(out))

        t0 = time.monotonic()
        rc, out, secs, tmo = a.run(None, timeout=0.5, kill_group=True, grace=10,
                                   argv=["/usr/bin/setsid", "/bin/sh", "-c",
                                         "sleep 30 & echo $! > %s/bg; wait" % d])
        with open(os.path.join(d, "bg")) as f:
            bg = int(f.read())
        time.sleep(0.2)
        gone = not os.path.exists("/proc/%d" % bg) or \
            open("/proc/%d/stat" % bg).read().split()[2] == "Z"
        check("timeout kills the command's process group", tmo and gone and
              time.monotonic() - t0 < 8, (tmo, gone, rc))
        try:
            a.run("sleep 3", timeout=0.3)
            check("timeout without kill_group raises QgaTimeout", False)
        except QgaTimeout:
            check("timeout without kill_group raises QgaTimeout", True)

        agents[0].drop_next = 1
        try:
            a.call("guest-exec", {"path": "/bin/true"}, timeout=0.5)
            lost = False
        except QgaTimeout:
            lost = True
        rc, out, _, _ = a.run("echo after", timeout=10)
        check("a lost answer: QgaTimeout, then a resync and the next command works",
              lost and out == "after\n" and a.resyncs >= 1, (lost, out, a.resyncs))

        agents[0].hangup_next = 1
        try:
            a.call("guest-info", timeout=2)
            hung = False
        except QgaError:
            hung = True
        rc, out, _, _ = a.run("echo again", timeout=10)
        check("a dropped connection: QgaError, then a reconnect on the same port",
              hung and out == "again\n" and a.reconnects >= 1 and a.path == paths[0],
              (hung, out, a.reconnects, a.path))

        try:
            a.call("guest-no-such-command", timeout=5)
            check("an agent error raises QgaError with its text", False)
        except QgaError as e:
            check("an agent error raises QgaError with its text", "has not been found" in str(e))

        b = QgaClient(paths, 0)
        b.wait_ready(10)
        check("second client claims port 1", b.path == paths[1], b.path)
        rc, out, _, _ = b.run("echo b", timeout=10)
        rc2, out2, _, _ = a.run("echo a", timeout=10)
        check("both clients served", (out, out2) == ("b\n", "a\n"))
        c = QgaClient(paths, 0)
        t0 = time.monotonic()
        try:
            c.wait_ready(1)
            check("third client refused while both ports are held", False, c.path)
        except QgaTimeout as e:
            check("third client refused while both ports are held",
                  "held by other clients" in str(e) and time.monotonic() - t0 < 5, str(e))
        a.close()
        c.wait_ready(10)
        check("a closed client's port goes to the waiting one", c.path == paths[0], c.path)
        check("it works there", c.run("echo c", timeout=10)[1] == "c\n")
        b.close()
        c.close()

        # a keeper holds the spare port idle and lets it go to a client
        a = QgaClient(paths, 0)
        a.wait_ready(10)
        n0, s0 = agents[1].connections, agents[1].served
        keeper = PortKeeper(paths[1:])
        time.sleep(4 * PortKeeper.CHECK)
        n1 = agents[1].connections
        held = keeper.held[paths[1]] is not None
        check("the keeper holds the idle spare port (connected, nothing sent)",
              held and n1 == n0 + 1 and agents[1].served == s0, (held, n0, n1))
        b = QgaClient(paths, 0)
        t0 = time.monotonic()
        b.wait_ready(10)
        waited = time.monotonic() - t0
        check("a client waiting for a port gets the keeper's within a second",
              b.path == paths[1] and waited < 1.0 and keeper.held[paths[1]] is None,
              (b.path, waited))
        check("and is served there", b.run("echo kept", timeout=10)[1] == "kept\n")
        b.close()
        time.sleep(4 * PortKeeper.CHECK)
        check("the keeper takes the port back when the client closes",
              keeper.held[paths[1]] is not None and agents[1].connections == n1 + 2,
              (agents[1].connections, n1))
        keeper.stop()
        check("a stopped keeper lets the port go", keeper.held[paths[1]] is None)
        a.close()

        # a detached cluster's keeper: a process of its own over all ports
        keeper_process(paths, agents)
    finally:
        a.close()
        for ag in agents:
            ag.close()
        shutil.rmtree(d, ignore_errors=True)
    return report()


if __name__ == "__main__":
    sys.exit(main())
