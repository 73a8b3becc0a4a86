#!/usr/bin/env bash
# detach does not hang when the server is gone or stops answering: it
# says the last flush did not reach the mirror (exit 1), and still leaves
# nothing behind (loop device, FUSE mount, nbdfuse, records).  A server
# that hangs costs the flush deadline (10 s), then nbdfuse is killed.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "attach needs root (loop devices)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE)"
need nbdfuse; need losetup

nothing_left() {
  local l
  l=$(losetup -l -n -O NAME,BACK-FILE | awk -v t="$T/" 'index($2, t) == 1') || true
  [ -z "$l" ] || fail "loop device left: $l"
  l=$(awk -v t="$T/" 'index($2, t) == 1' /proc/mounts) || true
  [ -z "$l" ] || fail "mount left: $l"
  for p in $(pgrep -x nbdfuse || true); do
    ! grep -qzxF "BLKMIRROR_STATE_DIR=$T/state" "/proc/$p/environ" 2>/dev/null ||
      fail "nbdfuse (pid $p) left running"
  done
  [ ! -e "$T/state/m0.attach" ] && [ ! -e "$T/state/m0.fuse" ] ||
    fail "attach records left: $(ls "$T/state")"
}

mkimg 64 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null

# The server is killed.
serve m0
dev=$(bm attach m0)
dd if=/dev/urandom of="$dev" bs=64k count=16 oflag=direct status=none
kill -9 "$(server_pid m0)"
wait "$(server_pid m0)" 2>/dev/null || true
expect_error "m0: detached $dev, but .*may not have reached the mirror" \
  timeout 40 "$BLKMIRROR" detach m0
nothing_left

# The server stops answering (SIGSTOP) with a write cached in the device.
serve m0
dev=$(bm attach m0)
head -c 1M /dev/urandom >"$T/data"
dd if="$T/data" of="$dev" bs=1M status=none   # buffered: flushed by detach
kill -STOP "$(server_pid m0)"
expect_error "m0: detached $dev, but the server did not answer the flush" \
  timeout 60 "$BLKMIRROR" detach m0
nothing_left
kill -CONT "$(server_pid m0)"
stop m0
