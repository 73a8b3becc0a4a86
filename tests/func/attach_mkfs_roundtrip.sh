#!/usr/bin/env bash
# attach makes a running mirror a block device (its path the only line on
# stdout); ext4 made on it, files written, unmounted, mounted again and
# read back; detach leaves nothing behind (no loop device over our files,
# no FUSE mount, no nbdfuse, no record); the files are on the components.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "attach needs root (loop devices)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE)"
need nbdfuse; need losetup; need mkfs.ext4

# Nothing of this test's attachment is left.
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

mkimg 80 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
size=$(( $(data_size "$T/a") ))

out=$(bm attach m0 2>"$T/attach.err")
[ "$(wc -l <<<"$out")" -eq 1 ] || fail "attach printed more than one line: $out"
[ ! -s "$T/attach.err" ] || fail "attach said on stderr: $(cat "$T/attach.err")"
dev=$out
[ -b "$dev" ] || fail "attach printed '$dev', not a block device"
[ "$(blockdev --getsize64 "$dev")" -eq "$size" ] ||
  fail "$dev has $(blockdev --getsize64 "$dev") bytes, the mirror $size"
st=$(bm status m0) || true
grep -qF "Device: $dev" <<<"$st" || fail "status does not show the device: $st"
jdev=$(bm status --json m0 | jq -r '.[0].device') || fail "status --json failed"
[ "$jdev" = "$dev" ] || fail "status --json says device $jdev, attach made $dev"

mkfs.ext4 -q -F "$dev"
mkdir "$T/mnt"
mount "$dev" "$T/mnt"
for i in 1 2 3; do
  head -c $((3 * MIB + i * 4096)) /dev/urandom >"$T/mnt/f$i"
done
(cd "$T/mnt" && sha256sum f1 f2 f3) >"$T/sums"
umount "$T/mnt"
mount "$dev" "$T/mnt"
(cd "$T/mnt" && sha256sum -c --quiet "$T/sums") || fail "files differ after remount"
umount "$T/mnt"

bm detach m0 || fail "detach failed"
nothing_left
st=$(bm status m0) || true
! grep -q "Device:" <<<"$st" || fail "status still shows a device: $st"
jdev=$(bm status --json m0 | jq -r '.[0].device') || fail "status --json failed"
[ "$jdev" = null ] || fail "status --json still says device $jdev after detach"
stop m0
nothing_left
left=$(cd "$T/state" && ls | tr '\n' ' ')
[ "$left" = "m0.components m0.lock m0.sizes " ] || fail "state directory holds: $left"

# What was written reached the mirror: both copies are identical, and
# one component alone (its data area) holds the file system and files.
same_data "$T/a" "$T/b"
ro=$(losetup -f --show -r --sizelimit "$size" "$T/a")
mount -o ro,noload "$ro" "$T/mnt"
(cd "$T/mnt" && sha256sum -c --quiet "$T/sums") || fail "component a lacks the files"
umount "$T/mnt"
losetup -d "$ro"
echo "ok: $dev carried ext4 through mkfs, two mounts and detach"
