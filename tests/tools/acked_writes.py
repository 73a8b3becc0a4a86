#!/usr/bin/env python3
"""Writes through NBD with many requests in flight and records which were
acknowledged; later checks that every acknowledged write reads back.

  acked_writes.py write URI STATEFILE [COUNT] [DEPTH] [SEED] [PACE_US]
  acked_writes.py verify URI STATEFILE

Each write is 4 KiB at its own offset (so no two writes overlap and every
acknowledged one has exactly one right value), filled with a pattern that
names its offset and round.  `write` exits 0 whatever the server answered
(errors are expected under fault injection) and prints how many were
acknowledged; `verify` exits 1 naming the first acknowledged write that
does not read back.
"""
import json
import random
import sys
import time

import nbd

BS = 4096


def pattern(off, tag):
    head = ("%016x-%08x-" % (off, tag)).encode()
    return (head * (BS // len(head) + 1))[:BS]


def do_write(uri, state, count, depth, seed, pace_us=0):
    rnd = random.Random(seed)
    h = nbd.NBD()
    h.connect_uri(uri)
    size = h.get_size()
    slots = size // BS
    offs = rnd.sample(range(slots), count)
    acked, failed = {}, 0
    inflight = {}
    i = 0
    while i < count or inflight:
        while i < count and len(inflight) < depth:
            off = offs[i] * BS
            tag = rnd.randrange(1 << 32)
            buf = nbd.Buffer.from_bytearray(bytearray(pattern(off, tag)))
            cookie = h.aio_pwrite(buf, off)
            inflight[cookie] = (off, tag, buf)
            i += 1
            if pace_us:
                time.sleep(pace_us / 1e6)
        h.poll(-1)
        for cookie in list(inflight):
            try:
                if h.aio_command_completed(cookie):
                    off, tag, _ = inflight.pop(cookie)
                    acked[off] = tag
            except nbd.Error:
                inflight.pop(cookie)
                failed += 1
    try:
        h.flush()
    except nbd.Error:
        pass
    try:
        h.shutdown()
    except nbd.Error:
        pass
    with open(state, "w") as f:
        json.dump(acked, f)
    print("acknowledged %d, failed %d" % (len(acked), failed))


def do_verify(uri, state):
    with open(state) as f:
        acked = json.load(f)
    h = nbd.NBD()
    h.connect_uri(uri)
    for off, tag in sorted(acked.items(), key=lambda kv: int(kv[0])):
        off = int(off)
        got = h.pread(BS, off)
        if got != pattern(off, tag):
            print("acknowledged write at offset %d does not read back "
                  "(got %r...)" % (off, bytes(got[:32])))
            sys.exit(1)
    h.shutdown()
    print("all %d acknowledged writes read back" % len(acked))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        a = sys.argv[2:]
        do_write(a[0], a[1], int(a[2]) if len(a) > 2 else 200,
                 int(a[3]) if len(a) > 3 else 16,
                 int(a[4]) if len(a) > 4 else 1,
                 int(a[5]) if len(a) > 5 else 0)
    else:
        do_verify(sys.argv[2], sys.argv[3])
