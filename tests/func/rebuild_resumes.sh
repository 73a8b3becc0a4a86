# A copy in full (rebuild) stopped cleanly in the middle resumes at its
# checkpoint at the next start and goes on in full from there (gmirror
# keeps its sync offset the same way): before, a copy in full started
# again from 0 at every restart.  b starts as zeros under a label that
# says it holds the data (label -n), so only a copy in full makes it
# equal to a: one that went on over the bitmap's regions only (none
# after a clean stop) would leave the part above the checkpoint zeros.
# After a crash (DIRTY labels) the copy starts again from 0.
. "$(dirname "$0")/lib.sh"
mkimg 160 a b
head -c $((159 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
B=$T/b
bm label -n m0 "$T/a" "$B" >/dev/null
serve m0
bm configure --sync-max 20M m0     # the copy takes ~8 s (a restart forgets it)
bm rebuild m0 "$B" >/dev/null || fail "rebuild refused: $(bm status m0)"
wait_sync_pct m0 45
stop m0
off=$(bm dump "$B" | awk '/SyncOffset/ {print $2}')
bm dump "$B" | has "Flags: SYNCHRONIZING, FORCE_SYNC" || fail "b's label after the stop: $(bm dump "$B")"
[ "$off" -gt 0 ] || fail "no checkpoint saved"
serve m0
grep -q "SyncStarted .*: copying from offset $off of [0-9]*$" "$T/m0.log" ||
  fail "did not resume in full at $off: $(grep SyncStarted "$T/m0.log")"
wait_complete m0
has "copied (in full)" "$T/m0.log" || fail "not copied in full: $(grep synchronized "$T/m0.log")"
bm dump "$B" | has "Flags: .*FORCE_SYNC" && fail "FORCE_SYNC left on b after its copy"
stop m0
cmp -n $((159 * MIB)) "$T/a" "$B" || fail "b differs from a after the resumed copy"

# a crash in the middle of a copy in full while clients write (DIRTY
# labels): from 0 again (a crash while idle leaves clean labels and
# resumes like a stop)
serve m0
bm configure --sync-max 20M m0
bm rebuild m0 "$B" >/dev/null || fail "second rebuild refused"
keep_writing m0
wait_sync_pct m0 45
out=$(bm list m0) || true
grep -q "Flags: DIRTY" <<<"$out" || fail "the mirror is not DIRTY: the case is not shown: $out"
kill -9 "$SERVER_PID_m0"; wait "$SERVER_PID_m0" 2>/dev/null || true
touch "$T/stop"; wait "$writer" || true     # (its last write may fail)
serve m0
last=$(grep "SyncStarted" "$T/m0.log" | tail -1)
grep -q "copying from offset 0 of" <<<"$last" ||
  fail "a copy in full after a crash did not start again from 0: $last"
wait_complete m0
stop m0
cmp -n $((159 * MIB)) "$T/a" "$B" || fail "b differs from a after the copy that followed the crash"
