#!/usr/bin/env bash
# What a reboot or a killed nbdfuse leaves behind.  A record whose loop
# device is gone (and whose FUSE mount is dead) is not shown by status,
# does not block stop, and the next attach clears it and attaches.  A
# live loop device whose nbdfuse was killed is detached (exit 1: the last
# flush failed) with nothing left.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "attach needs root (loop devices)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE)"
need nbdfuse; need losetup
[ -e /sys/module/nbd ] && command -v nbd-client >/dev/null &&
  skip "kernel NBD here: attach does not use nbdfuse"

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
nbdfuse_pid() { awk '$1 == "pid" {print $2}' "$T/state/m0.attach"; }

mkimg 64 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0

# "Reboot": nbdfuse dies, the loop device is released; the record stays.
dev=$(bm attach m0)
kill -9 "$(nbdfuse_pid)"
losetup -d "$dev"
[ -e "$T/state/m0.attach" ] || fail "the record should still be there"
grep -q " $T/state/m0.fuse " /proc/mounts || fail "the dead FUSE mount should be there"
st=$(bm status m0) || true
! grep -q "Device:" <<<"$st" || fail "status shows a stale device: $st"
dev=$(bm attach m0) || fail "attach over a stale record failed"
[ -b "$dev" ] || fail "attach printed '$dev'"
bm detach m0 || fail "detach failed"
nothing_left

# nbdfuse is killed under a live loop device.
dev=$(bm attach m0)
kill -9 "$(nbdfuse_pid)"
expect_error "m0: detached $dev, but flushing $dev failed" bm detach m0
nothing_left
stop m0
left=$(cd "$T/state" && ls | tr '\n' ' ')
[ "$left" = "m0.components m0.lock m0.sizes " ] || fail "state directory holds: $left"
