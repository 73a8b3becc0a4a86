# A FAILED device component whose path now names a device another program
# holds (gone and back under the same name, and claimed meanwhile by, say,
# LVM or md auto-assembly): rebuild says the device is in use, not "still
# has requests outstanding from before it failed" (the reopen's EBUSY was
# taken for our own old connection draining), and the component stays
# FAILED until it is freed; then rebuild brings it back.
. "$(dirname "$0")/lib.sh"
need losetup
need blockdev
need qemu-io
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
devno() { echo $((0x$(stat -L -c %t "$1"))) $((0x$(stat -L -c %T "$1"))); }
mkimg 64 a b
ld=$(losetup -f --show "$T/b" 2>/dev/null) || skip "no loop devices here"
# the component's path is a device node of the test's own, so that it can
# name another device later
mknod "$T/dev0" b $(devno "$ld")
bm label -n m0 "$T/a" "$T/dev0" >/dev/null
serve m0
wait_complete m0
blockdev --setro "$ld"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x42 0 1M' -c flush >/dev/null
out=$(bm status m0) || true
has "dev0 (FAILED: " <<<"$out" || fail "not FAILED: $out"
blockdev --setrw "$ld"
# the same name, another device (a copy of it), held by another program
cp "$T/b" "$T/c"
l2=$(losetup -f --show "$T/c") || skip "no second loop device"
rm "$T/dev0"
mknod "$T/dev0" b $(devno "$l2")
"$PY" -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
open(sys.argv[2], "w").close()
time.sleep(60)' "$l2" "$T/held" &
holder=$!
for _ in $(seq 1 100); do [ -f "$T/held" ] && break; sleep 0.05; done
[ -f "$T/held" ] || fail "the holder did not open $l2"
expect_error "cannot bring back $T/dev0: $T/dev0: the device is in use" \
  bm rebuild --wait m0 "$T/dev0"
out=$(bm status m0) || true
has "dev0 (FAILED: " <<<"$out" || fail "not FAILED after the refusal: $out"
kill "$holder"; wait "$holder" 2>/dev/null || true
bm rebuild --wait m0 "$T/dev0" >/dev/null || fail "rebuild after the holder left failed"
out=$(bm status m0) || fail "not COMPLETE after rebuild: $out"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x42 0 1M' >/dev/null || fail "the write reads back wrong"
stop m0
cmp -n $(data_size "$T/a") "$T/a" "$T/c" || fail "copies differ after the rebuild"
