# configure -p sets a component's priority on a running mirror (its label
# is rewritten, `prefer` reads from it at once) and on a stopped one (the
# label, under NAME.lock).  The two copies are made to differ on purpose
# (label -n over different data) so that a read says which one served it.
# Then once under client writes.  Refusals: exit 1 and one line; a wrong
# command line: exit 2.
. "$(dirname "$0")/lib.sh"
need nbdsh
need qemu-io
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a b
head -c $MIB /dev/zero | tr '\0' A | dd of="$T/a" conv=notrunc status=none
head -c $MIB /dev/zero | tr '\0' B | dd of="$T/b" conv=notrunc status=none
bm label -n -b prefer m0 "$T/a" "$T/b"
expect_usage "priority '256' is not a number from 0 to 255" bm configure -p 256 m0 "$T/b"
expect_usage "priority 'x' is not a number" bm configure -p x m0 "$T/b"
expect_usage "usage: blkmirror configure" bm configure -p 1 m0
expect_usage "usage: blkmirror configure" bm configure -p 1 -b load m0 "$T/b"
expect_error "nosuch is not a component of m0" bm configure -p 1 m0 "$T/nosuch"
# stopped: the label only
bm configure -p 7 m0 "$T/b" || fail "offline configure -p failed"
bm dump "$T/b" | has "Priority: 7" || fail "offline -p not in b's label"
bm dump "$T/a" | has "Priority: 0" || fail "offline -p changed a's label"
serve m0
reads() { qemu-io -f raw -r "$(uri m0)" -c "read -P $1 0 64k" >/dev/null 2>&1; }
reads 0x42 || fail "prefer did not read b (priority 7) after a restart"
bm configure -p 9 m0 "$T/a" || fail "live configure -p failed"
reads 0x41 || fail "prefer did not switch to a (priority 9)"
out=$(bm list m0)
grep -q "Priority: 9" <<<"$out" || fail "list does not show priority 9: $out"
bm configure -p 3 m0 "$T/a"
reads 0x42 || fail "prefer did not switch back to b"
# and once more while a client writes (which may overwrite what the reads
# above told apart)
"$PY" "$tool" write "$(uri m0)" "$T/acked" 2000 16 7 300 >"$T/writer.out" 2>&1 &
writer=$!
for _ in $(seq 1 200); do
  out=$(bm list m0) || true; grep -q "Flags: DIRTY" <<<"$out" && break; sleep 0.05
done
bm configure -p 4 m0 "$T/a" || fail "live configure -p under writes failed"
wait $writer || fail "the writer failed"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
bm dump "$T/a" | has "Priority: 4" || fail "live -p not kept in a's label"
bm dump "$T/b" | has "Priority: 7" || fail "b's priority changed"
