# One component seen twice (RELIABILITY.md 18) is used once: a loop device
# over a component file (the kernel tells: its backing file), and a copy
# made with cp (the same component id in its label; no kernel identity).
# The extra view is ABSENT "the same component as ..." and gets no writes.
. "$(dirname "$0")/lib.sh"
need qemu-io
need losetup
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
la=$(losetup -f --show "$T/a" 2>/dev/null) || skip "no loop devices here"
cp --sparse=always "$T/a" "$T/a.copy"
printf '%s\n' "$la" "$T/a.copy" >>"$BLKMIRROR_STATE_DIR/m0.components"
serve m0
out=$(bm status m0) || true
grep -q "$la (ABSENT: the same component as $T/a (the same disk through another path))" <<<"$out" ||
  fail "the loop device view is not left out: $out"
grep -q "$T/a.copy (ABSENT: the same component as $T/a (the same component id" <<<"$out" ||
  fail "the copy is not left out: $out"
[ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] || fail "not two ACTIVE components: $out"
copy_sha=$(file_sha "$T/a.copy")
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 0 1M' >/dev/null
stop m0
[ "$copy_sha" = "$(file_sha "$T/a.copy")" ] || fail "the copy was written to"
same_data "$T/a" "$T/b"
cmp -n "$MIB" "$T/a" <(head -c "$MIB" /dev/zero | tr '\0' '\132') || fail "a lacks the write"
