#!/usr/bin/env python3
"""An NBD server that breaks the protocol one way: once the file FLAG
exists, it answers every read of 512 KiB or more with a data chunk that
covers only the first half of the range, flagged as the last one (MODE
half), or with that chunk twice, the second flagged as the last (MODE
twice: the bytes add up to the length asked).  Until then it is a correct
in-memory disk (so that a mirror can be labeled on it).  For tests of
what a client does with a reply that leaves part of its buffer unwritten.

    nbd_short_reads.py SOCKET SIZE FLAG [half|twice]
"""
import os
import socket
import struct
import sys
import threading

sock_path, size, flag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else "half"
disk = bytearray(size)
disk_lock = threading.Lock()

OPT_REPLY_MAGIC = 0x3E889045565A9
STRUCT_MAGIC = 0x668E33EF


def recv_exact(conn, n):
    buf = bytearray()
    while len(buf) < n:
        got = conn.recv(n - len(buf))
        if not got:
            raise EOFError
        buf += got
    return bytes(buf)


def option_reply(conn, opt, kind, payload=b""):
    conn.sendall(struct.pack(">QIII", OPT_REPLY_MAGIC, opt, kind, len(payload)) + payload)


def chunk(conn, flags, kind, handle, payload=b""):
    conn.sendall(struct.pack(">IHHQI", STRUCT_MAGIC, flags, kind, handle, len(payload)) + payload)


def negotiate(conn):
    # newstyle, fixed; structured replies accepted; GO/INFO answered
    conn.sendall(b"NBDMAGIC" + b"IHAVEOPT" + struct.pack(">H", 1 | 2))
    recv_exact(conn, 4)
    while True:
        _, opt, length = struct.unpack(">QII", recv_exact(conn, 16))
        recv_exact(conn, length)
        if opt == 8:  # STRUCTURED_REPLY
            option_reply(conn, opt, 1)
        elif opt in (6, 7):  # INFO, GO
            option_reply(conn, opt, 3, struct.pack(">HQH", 0, size, 1 | 4))
            option_reply(conn, opt, 1)
            if opt == 7:
                return True
        elif opt == 2:  # ABORT
            return False
        else:
            option_reply(conn, opt, (1 << 31) + 1)  # unsupported


def serve(conn):
    if not negotiate(conn):
        return
    while True:
        _, _, kind, handle, off, length = struct.unpack(">IHHQQI", recv_exact(conn, 28))
        if kind == 0:  # READ
            n = length
            if length >= (512 << 10) and os.path.exists(flag):
                n = length // 2
            with disk_lock:
                data = bytes(disk[off:off + n])
            if n != length and mode == "twice":
                chunk(conn, 0, 1, handle, struct.pack(">Q", off) + data)  # OFFSET_DATA
            chunk(conn, 1, 1, handle, struct.pack(">Q", off) + data)  # OFFSET_DATA, DONE
        elif kind == 1:  # WRITE
            data = recv_exact(conn, length)
            with disk_lock:
                disk[off:off + length] = data
            chunk(conn, 1, 0, handle)
        elif kind == 2:  # DISCONNECT
            return
        else:  # FLUSH, TRIM, ...: done
            chunk(conn, 1, 0, handle)


listener = socket.socket(socket.AF_UNIX)
listener.bind(sock_path)
listener.listen(8)
while True:
    c, _ = listener.accept()

    def run(c=c):
        try:
            serve(c)
        except (EOFError, ConnectionError):
            pass
        c.close()

    threading.Thread(target=run, daemon=True).start()
