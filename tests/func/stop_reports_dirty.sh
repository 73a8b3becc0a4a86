# stop says so when the server could not mark the labels clean: exit 1,
# the reason, and that the next serve resynchronizes (before: "m0 stopped
# cleanly", while the server's log said a label could not be marked
# clean).  The next serve does resynchronize, and the data is intact.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
faildisk f 64
F=$(disk_uri f)
bm label -n m0 "$T/a" "$F" >/dev/null
serve m0
wait_complete m0
pid=$(server_pid m0)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 1M 64k' >/dev/null
fail_writes f $((64 * MIB - 4096))
rc=0; out=$("$BLKMIRROR" stop m0 2>&1) || rc=$?
wait "$pid" || true
[ $rc -eq 1 ] || fail "stop exited $rc (want 1): $out"
has "m0 stopped, but not cleanly: a label could not be marked clean" <<<"$out" || fail "stop said: $out"
has "next serve resynchronizes" <<<"$out" || fail "stop did not say what comes next: $out"
has "stopped, left marked dirty" "$T/m0.log" || fail "the server's log: $(tail -3 "$T/m0.log")"
take_writes f
serve m0
# (f's label kept DIRTY at the count before the stop's clean mark, which
# a's label took: f is copied as a copy behind the others)
has -E "was not stopped cleanly|f.disk.sock is an older copy of itself" "$T/m0.log" ||
  fail "the next serve did not see the dirty stop: $(tail -5 "$T/m0.log")"
wait_complete m0
has "f.disk.sock synchronized" "$T/m0.log" || fail "f was not resynchronized: $(tail -5 "$T/m0.log")"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x5a 1M 64k' >"$T/read.out" 2>&1 || fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
out=$("$BLKMIRROR" stop m0 2>&1) || fail "a clean stop failed: $out"
has "m0 stopped cleanly" <<<"$out" || fail "the clean stop said: $out"
