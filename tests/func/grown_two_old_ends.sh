# A grown component with labels at two of its old ends (its own, where it
# was when it was labelled, and a stale one at a size another member of
# the mirror records: here a copy of that member's label block, as when an
# image of it was once laid over this disk) is not taken: which is its own
# cannot be told.  The mirror starts without it, says why, and writes
# nothing to it.  Before this test the refusal was reviewed only.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
mkimg 40 b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x51 1M 64k' >/dev/null || fail "write"
stop m0
# a's label block where b's label would be at a's size; then b grows
dd if="$T/a" of="$T/b" bs=4096 skip=$((32 * 256 - 1)) seek=$((32 * 256 - 1)) count=1 conv=notrunc status=none
truncate -s 48M "$T/b"
before=$(file_sha "$T/b")
serve m0
out=$(bm status m0) || true
echo "$out"
has "labels at two of its old ends (when it was 33554432 and 41943040 bytes)" "$T/m0.log" ||
  { cat "$T/m0.log"; fail "the server did not say why b was left out"; }
has -E "m0 +DEGRADED" <<<"$out" || fail "status: $out"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x51 1M 64k' >/dev/null || fail "the data written before is gone"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x52 2M 64k' >/dev/null || fail "write while b is left out"
stop m0
[ "$(file_sha "$T/b")" = "$before" ] || fail "b was written to although it was not taken"
# what the message advises: shrunk back to its size, b is taken again and
# caught up with the write it missed
truncate -s 40M "$T/b"
serve m0
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x52 2M 64k' >/dev/null || fail "the write made without b is gone"
stop m0
cmp -n $((30 * MIB)) "$T/a" "$T/b" || fail "b was not caught up"
