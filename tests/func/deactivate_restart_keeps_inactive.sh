# An INACTIVE component stays INACTIVE across a restart (its label says so;
# assembly keeps it out of service but open, and its lease is this
# server's), is not written while INACTIVE, and `activate --wait` after the
# restart copies it in full under client writes: then every acknowledged
# write reads back and the three copies are byte-identical.  A clean stop
# with an INACTIVE component leaves no lease to take over.
. "$(dirname "$0")/lib.sh"
need nbdsh
need qemu-io
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
bm deactivate m0 "$T/c"
stop m0
out=$(bm status m0) || true
grep -q "$T/c (inactive" <<<"$out" || fail "stopped status does not say inactive: $out"
json=$(bm status --json m0) || true
grep -q '"state": "INACTIVE"' <<<"$json" || fail "status --json: $json"
serve m0
grep -q "taking over the lease" "$T/m0.log" && fail "restart took over a lease of its own"
out=$(bm status m0) || true
grep -q "$T/c (INACTIVE" <<<"$out" || fail "not INACTIVE after restart: $out"
json=$(bm status --json m0) || true
grep -q '"state": "INACTIVE"' <<<"$json" || fail "status --json running: $json"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x61 0 2M' -c flush >/dev/null
cmp -n $MIB "$T/c" <(head -c $MIB /dev/zero | tr '\0' a) >/dev/null &&
  fail "a write reached the INACTIVE component after the restart"
"$PY" "$tool" write "$(uri m0)" "$T/acked" 3000 16 2 300 >"$T/writer.out" 2>&1 &
writer=$!
bm activate --wait m0 "$T/c" >"$T/wait.out" || fail "activate --wait exited $?: $(cat "$T/wait.out")"
grep -q "synchronized" "$T/wait.out" || fail "activate --wait said: $(cat "$T/wait.out")"
out=$(bm status m0) || fail "not COMPLETE after activate --wait: $out"
wait $writer || fail "the writer failed"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
grep -q "SyncStarted $T/c: copying from offset 0 " "$T/m0.log" || fail "c not copied from offset 0"
stop m0
same_data "$T/a" "$T/b"
same_data "$T/a" "$T/c"
bm dump "$T/c" | has "Flags: NONE" || fail "c's label still flagged: $(bm dump "$T/c")"
