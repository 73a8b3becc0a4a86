#!/usr/bin/python3
"""Plays systemd's side of sd_notify(3) for tests/func/sd_notify.sh.

notify_listener.py ADDRESS NBD_SOCKET CTL_SOCKET LOG

Binds an AF_UNIX datagram socket at ADDRESS (a path, or '@name' in the
abstract namespace, as $NOTIFY_SOCKET names it), then writes every line of
every message it receives to LOG.  When a message says READY=1 it checks,
at that very moment, that the NBD socket accepts a connection and sends
the NBD greeting, and that the control socket exists; it logs
"nbd-accepts" or "nbd-refused: WHY", "ctl-exists" or "ctl-missing".
It creates LOG.bound once it listens.  Runs until killed.
"""
import os
import socket
import sys

addr, nbd_sock, ctl_sock, log = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(log + ".bound", "w").close()


def check_nbd():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(10)
    try:
        c.connect(nbd_sock)
        greeting = b""
        while len(greeting) < 8:
            got = c.recv(8 - len(greeting))
            if not got:
                break
            greeting += got
        if greeting != b"NBDMAGIC":
            return "nbd-refused: greeting %r" % greeting
        return "nbd-accepts"
    except OSError as e:
        return "nbd-refused: %s" % e
    finally:
        c.close()


with open(log, "a") as f:
    while True:
        msg = s.recv(65536).decode(errors="replace")
        for line in msg.split("\n"):
            f.write(line + "\n")
            if line == "READY=1":
                f.write(check_nbd() + "\n")
                f.write(("ctl-exists" if os.path.exists(ctl_sock)
                         else "ctl-missing") + "\n")
        f.write("--\n")  # end of one datagram
        f.flush()
