# An older copy of the SOURCE put back while every other component is being
# copied (a snapshot of a taken before a rebuild of b, restored while the
# mirror was stopped) is refused as the source: b's label counts more
# events than a.snap's, so a.snap is behind the mirror.  Before, a.snap was
# the only full component, became the source, and the write acknowledged
# after the snapshot (0x22 at 8M) was lost on both copies.  The refusal
# changes nothing; with the current a back, the mirror starts and holds the
# write; --force-source takes the snapshot when the administrator says so.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
bm label m0 "$T/a" "$T/b" >/dev/null
serve m0
wait_complete m0
# data everywhere (holes are copied at once, data at --sync-max)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x11 0 63M' >/dev/null
stop m0
cp --sparse=always "$T/a" "$T/a.snap"          # the snapshot, taken stopped

serve m0
bm configure --sync-max 4M m0                  # b stays SYNCHRONIZING
bm rebuild m0 "$T/b" >/dev/null || fail "rebuild refused: $(bm status m0)"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x22 8M 1M' >/dev/null
stop m0
bm dump "$T/b" | has "Flags: .*SYNCHRONIZING" || fail "b is not being copied: $(bm dump "$T/b")"

mv "$T/a" "$T/a.current"
cp --sparse=always "$T/a.snap" "$T/a"
before=$(file_sha "$T/a")$(file_sha "$T/b")
expect_error "$T/a, the newest component holding the data in full, is behind $T/b \(being copied; [0-9]+ events to its [0-9]+\).*--force-source $T/a m0'\$" \
  timeout 30 "$BLKMIRROR" serve m0 --socket "$T/m0.sock"   # (not refused: it serves)
[ "$before" = "$(file_sha "$T/a")$(file_sha "$T/b")" ] || fail "the refused serve changed a component"
# status of the stopped mirror says so too (mdadm's honesty about state)
rc=0; out=$(bm status m0 2>&1) || rc=$?
[ $rc -eq 3 ] || fail "status of the stopped mirror exited $rc: $out"
has "Note: serve refuses to start it: mirror 'm0': $T/a, the newest component holding the data in full, is behind $T/b" <<<"$out" ||
  fail "status does not say why the mirror cannot start: $out"
out=$(bm status --json m0 2>&1) || true
has '"note": "serve refuses to start it: ' <<<"$out" || fail "status --json has no note: $out"
# clearing b, the evidence, would let the next start take the snapshot
expect_error "$T/b shows that $T/a is an older copy of mirror 'm0' \([0-9]+ events to its [0-9]+\): cleared, the next start takes $T/a's older data; 'blkmirror clear -f $T/b' clears it anyway" \
  bm clear "$T/b"
[ "$before" = "$(file_sha "$T/a")$(file_sha "$T/b")" ] || fail "the refused clear changed a component"

# the current a back: served, the write is there, b's copy goes on
mv "$T/a.current" "$T/a"
serve m0
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x22 8M 1M' -c 'read -P 0x11 0 8M' >"$T/read.out" 2>&1 ||
  fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "the acknowledged write is lost: $(cat "$T/read.out")"
stop m0
cmp -n $((63 * MIB)) "$T/a" "$T/b" || fail "b differs from a after its copy"

# the administrator's choice: the snapshot, the writes after it given up
serve m0
bm configure --sync-max 4M m0
bm rebuild m0 "$T/b" >/dev/null || fail "second rebuild refused"
stop m0
cp --sparse=always "$T/a.snap" "$T/a"
serve m0 --force-source "$T/a"
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x11 8M 1M' >"$T/read.out" 2>&1 ||
  fail "the forced snapshot's data: $(cat "$T/read.out")"
stop m0
cmp -n $((63 * MIB)) "$T/a" "$T/b" || fail "b differs from the forced source"
