# A mounted filesystem on the mirror (ext4 on a loop device over nbdfuse)
# blocks stop: it is refused naming the nbdfuse client, the mirror serves
# on, and after umount stop is clean and the data is on both components.
. "$(dirname "$0")/lib.sh"
need nbdfuse
need mkfs.ext4
[ -e /dev/fuse ] || skip "/dev/fuse is not available"
[ "$(id -u)" -eq 0 ] || skip "needs root (mount, loop devices)"
losetup -f >/dev/null 2>&1 || skip "no free loop device"
FUSER=$(command -v fusermount3 || command -v fusermount || true)
LOOP=
unmount_all() {
  if mountpoint -q "$T/fs" 2>/dev/null; then umount "$T/fs" || umount -l "$T/fs"; fi
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
  # (a FUSE mount whose nbdfuse died is no longer a "mountpoint")
  if grep -q " $T/fuse " /proc/mounts; then
    { [ -n "$FUSER" ] && "$FUSER" -uz "$T/fuse"; } || umount -l "$T/fuse"
  fi
  return 0
}
trap 'rc=$?; unmount_all; set +e; (exit $rc); cleanup' EXIT
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
mkdir "$T/fuse" "$T/fs"
nbdfuse "$T/fuse" "$(uri m0)" >"$T/nbdfuse.log" 2>&1 &
fpid=$!
PIDS+=("$fpid")
for _ in $(seq 1 200); do
  [ -e "$T/fuse/nbd" ] && break
  kill -0 "$fpid" 2>/dev/null || skip "nbdfuse cannot mount here: $(tail -n 1 "$T/nbdfuse.log")"
  sleep 0.05
done
[ -e "$T/fuse/nbd" ] || fail "nbdfuse did not come up"
LOOP=$(losetup -f --show "$T/fuse/nbd")
mkfs.ext4 -q -F "$LOOP"
mount "$LOOP" "$T/fs" || skip "cannot mount ext4 here"
echo "kept" >"$T/fs/file"
sync
expect_error "m0 has [0-9]+ NBD connections? open \(([0-9]+ from )?pid $fpid \(nbdfuse\) on the unix socket\)" bm stop m0
kill -0 "$(server_pid m0)" || fail "the server stopped under a mounted filesystem"
echo "more" >>"$T/fs/file"
sync
umount "$T/fs"
losetup -d "$LOOP"; LOOP=
if [ -n "$FUSER" ]; then "$FUSER" -u "$T/fuse"; else umount "$T/fuse"; fi
wait "$fpid" || true
out=$(bm stop m0) || fail "stop after umount failed"
[ "$out" = "m0 stopped cleanly" ] || fail "stop said '$out'"
same_data "$T/a" "$T/b"
# The filesystem is intact on a component alone.
LOOP=$(losetup -f --show -r --sizelimit "$(data_size "$T/b")" "$T/b")
mount -o ro "$LOOP" "$T/fs"
[ "$(cat "$T/fs/file")" = "kept
more" ] || fail "file content lost: $(cat "$T/fs/file")"
