#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit test of exanet-mgmt-hub (TAP): three fake QEMU ports exchange
Ethernet frames through the hub: flooding, MAC learning, unknown senders."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("BUILD") or os.path.dirname(HERE)
HUB = os.environ.get("EXANET_MGMT_HUB") or os.path.join(BUILD, "bin", "exanet-mgmt-hub")
if not os.path.exists(HUB):     # run from the source tree
    HUB = os.path.join(HERE, "..", "..", "..", "build", "bin", "exanet-mgmt-hub")

# taplib.py: in tools/cluster/, next to this directory in the source tree,
# TOP/tools/cluster from the installed copy in build/host-tests/
TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(TOP, "tools", "cluster")]
from taplib import check, report  # noqa: E402


def mac(i):
    return bytes([0x52, 0x54, 0, 0x42, 0, i])


def frame(dst, src, payload=b"x" * 50):
    return dst + src + b"\x08\x00" + payload


def recv(s, t=0.5):
    s.settimeout(t)
    try:
        return s.recv(65536)
    except (socket.timeout, BlockingIOError):
        return None


def main():
    d = tempfile.mkdtemp(prefix="hubt-")
    hubp = os.path.join(d, "hub")
    paths = [os.path.join(d, "n%d" % i) for i in range(3)]
    socks = []
    for p in paths:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(p)
        socks.append(s)
    hub = subprocess.Popen([HUB, hubp] + paths + [os.path.join(d, "absent")])
    try:
        for _ in range(100):
            if os.path.exists(hubp):
                break
            time.sleep(0.02)
        check("hub socket created", os.path.exists(hubp))
        bcast = b"\xff" * 6
        f = frame(bcast, mac(0), b"hello-broadcast")
        socks[0].sendto(f, hubp)
        r1, r2 = recv(socks[1]), recv(socks[2])
        check("broadcast flooded to port 1", r1 == f)
        check("broadcast flooded to port 2", r2 == f)
        check("no echo to sender", recv(socks[0], 0.2) is None)
        # node1 answers node0 (unicast to a learned MAC) -> only port 0
        f = frame(mac(0), mac(1), b"reply")
        socks[1].sendto(f, hubp)
        check("unicast to learned MAC delivered", recv(socks[0]) == f)
        check("unicast not flooded", recv(socks[2], 0.2) is None)
        # unknown unicast floods
        f = frame(mac(9), mac(2), b"unknown")
        socks[2].sendto(f, hubp)
        check("unknown unicast flooded (0)", recv(socks[0]) == f)
        check("unknown unicast flooded (1)", recv(socks[1]) == f)
        # a stranger is ignored
        st = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        st.bind(os.path.join(d, "stranger"))
        st.sendto(frame(bcast, mac(7)), hubp)
        check("frames from unknown sockets dropped",
              recv(socks[0], 0.2) is None and recv(socks[1], 0.2) is None)
        # runt frames dropped
        socks[0].sendto(b"short", hubp)
        check("runt frames dropped", recv(socks[1], 0.2) is None)
        # big frame
        f = frame(mac(1), mac(0), b"y" * 9000)
        socks[0].sendto(f, hubp)
        check("jumbo frame forwarded intact", recv(socks[1]) == f)
    finally:
        hub.terminate()
        try:
            rc = hub.wait(5)
        except subprocess.TimeoutExpired:
            hub.kill()
            rc = hub.wait()
        check("hub exits 0 on SIGTERM", rc == 0)
        check("hub unlinks its socket", not os.path.exists(hubp))
        shutil.rmtree(d, ignore_errors=True)
    return report()


if __name__ == "__main__":
    sys.exit(main())
