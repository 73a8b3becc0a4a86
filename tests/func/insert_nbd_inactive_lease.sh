# insert of an NBD export (nbdkit disk): copied, its lease taken and
# renewed by this server; the same export under another URI is refused
# (a token written through one is read back through the other); a
# component inserted with -i is INACTIVE: neither read, written nor copied,
# and still not in service after a restart.  After forget, a forgotten
# component's lease is no longer renewed.
. "$(dirname "$0")/lib.sh"
need nbdsh
need qemu-io
mkimg 64 a b e
disk d0 64M
bm label -n m0 "$T/a" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x71 0 2M' >/dev/null || fail "write failed"
d0=$(disk_uri d0)
out=$(bm insert --wait m0 "$d0") || { echo "$out"; fail "insert of an NBD export failed"; }
out=$(bm status m0) || true
grep -q "$d0 (ACTIVE)" <<<"$out" || fail "the export is not ACTIVE: $out"
l1=$("$TEST_TOOLS/lease_tool" dump "$d0")
grep -q "^state=active .*pid=$(server_pid m0) .*mirror=m0" <<<"$l1" || fail "lease not ours: $l1"
seq1=$(sed -n 's/.*seq=\([0-9]*\).*/\1/p' <<<"$l1")
for _ in $(seq 1 100); do
  seq2=$("$TEST_TOOLS/lease_tool" dump "$d0" | sed -n 's/.*seq=\([0-9]*\).*/\1/p')
  [ "$seq2" -gt "$seq1" ] && break
  sleep 0.1
done
[ "$seq2" -gt "$seq1" ] || fail "the inserted component's lease is not renewed (seq $seq1 -> $seq2)"
# the same export through another URI spelling
expect_error "is the same disk as .*/d0.disk.sock, already a component of m0 \(a block written through one was read back" bm insert m0 "nbd+unix:///?socket=$T/./d0.disk.sock"
# -i: INACTIVE
sum_e=$(file_sha "$T/e" $((63 * MIB)))
out=$(bm insert -i m0 "$T/e") || fail "insert -i failed"
grep -q "^m0: inserted $T/e (INACTIVE)$" <<<"$out" || fail "insert -i said '$out'"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x72 0 4M' >/dev/null || fail "write failed"
out=$(bm status m0) || true
grep -q "$T/e (INACTIVE: inserted inactive)" <<<"$out" || fail "e not shown inactive: $out"
[ "$(file_sha "$T/e" $((63 * MIB)))" = "$sum_e" ] || fail "an INACTIVE component was written"
bm dump "$T/e" | has "^ *Flags:.*INACTIVE" || fail "e's label does not say INACTIVE"
grep -qx "$T/e" "$BLKMIRROR_STATE_DIR/m0.components" || fail "e not in the state list"
# forget leaves INACTIVE components alone (they are connected)
out=$(bm forget m0) || fail "forget failed"
grep -q "nothing to forget" <<<"$out" || fail "forget said '$out'"
stop m0
serve m0
out=$(bm status m0) || true
grep -q "$T/e (INACTIVE: deactivated)" <<<"$out" || fail "after restart e is not inactive: $out"
grep -q "$d0 (ACTIVE)" <<<"$out" || fail "after restart the export is not ACTIVE: $out"
[ "$(file_sha "$T/e" $((63 * MIB)))" = "$sum_e" ] || fail "an INACTIVE component was written after restart"
# the export goes away: forgotten, and its lease is no longer renewed
disk_kill d0
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q "$d0 (DISCONNECTED" <<<"$out" && break
  sleep 0.1
done
grep -q "$d0 (DISCONNECTED" <<<"$out" || fail "the export not DISCONNECTED: $out"
out=$(bm forget m0) || fail "forget failed"
grep -q "^$d0: forgotten (DISCONNECTED)" <<<"$out" || fail "forget said '$out'"
stop m0
same_data "$T/a" "$T/b"
