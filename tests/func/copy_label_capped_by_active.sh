# A label that is not full (a component being copied, or INACTIVE)
# never records more events than the disk of any ACTIVE component holds
# (meta.c events_cap), not just no more than some full label once held.
# Here a's label writes fail (a stays the ACTIVE source, client writes are
# refused) while b's copy ends: b's full label lands the mirror's newer
# count, a's disk keeps the older one.  c is then inserted INACTIVE (its
# label at the mirror's genid), b is copied again, and the stop's clean
# mark fails on a too.  Before, b's and c's labels carried the count b's
# full label had landed, more than a's: the next start took a for an
# older copy put back (assembly_decide.c rule 4) and refused.  With the
# highest of the ACTIVE ones as the cap, b's was right and c's still too
# high (the start was refused over c).
. "$(dirname "$0")/lib.sh"
need qemu-io
faildisk a 64
mkimg 64 b
mkimg 64 c
A=$(disk_uri a)
events_of() { bm dump "$1" | awk '/^ *Events:/ {print $2}'; }
bm label -n m0 "$A" "$T/b" >/dev/null
serve m0
bm configure --sync-max 4M m0                  # b stays SYNCHRONIZING
bm rebuild m0 "$T/b" >/dev/null || fail "rebuild refused: $(bm status m0)"
fail_writes a $((64 * MIB - 4096))             # a's label
# the write's DIRTY mark cannot land on a, the only ACTIVE component
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 1M 64k' >"$T/w.out" 2>&1 &&
  fail "a write was acknowledged with no label marked DIRTY: $(cat "$T/w.out")"
bm configure --sync-max 0 m0
wait_status m0 "/b (ACTIVE" 30
ea=$(events_of "$A") eb=$(events_of "$T/b")
[ -n "$ea" ] && [ -n "$eb" ] || fail "no events in the dumps: $(bm dump "$A")"
[ "$eb" -gt "$ea" ] || fail "b's full label counts $eb, a's $ea: the case is not shown"
# c is labelled while b (more events) and a (fewer) are ACTIVE (the
# rewrite of the others' labels fails on a: only logged)
bm insert -i m0 "$T/c" >/dev/null || fail "insert refused: $(bm status m0)"
bm dump "$T/c" | has "Flags: .*INACTIVE" || fail "c is not labelled INACTIVE: $(bm dump "$T/c")"
ec=$(events_of "$T/c")
[ "$ec" -le "$ea" ] || fail "the INACTIVE c's label counts $ec events, a's disk only $ea"
bm configure --sync-max 4M m0                  # b stays SYNCHRONIZING
bm rebuild m0 "$T/b" >/dev/null || fail "second rebuild refused: $(bm status m0)"
bm dump "$T/b" | has "Flags: .*SYNCHRONIZING" || fail "b is not being copied: $(bm dump "$T/b")"
# the stop's clean mark cannot land on a either (stop says so)
rc=0; out=$("$BLKMIRROR" stop m0 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "stop exited $rc (want 1): $out"
wait "$(server_pid m0)" 2>/dev/null || true
bm dump "$T/b" | has "Flags: .*SYNCHRONIZING" || fail "b is not being copied: $(bm dump "$T/b")"
ea=$(events_of "$A") eb=$(events_of "$T/b") ec=$(events_of "$T/c")
[ "$eb" -le "$ea" ] || fail "b's label counts $eb events while being copied, the source's disk only $ea"
[ "$ec" -le "$ea" ] || fail "the INACTIVE c's label counts $ec events, the source's disk only $ea"
take_writes a
serve m0
status=$("$BLKMIRROR" status m0 2>&1) || true
has "a.disk.sock (ACTIVE" <<<"$status" || fail "a is not the source: $status"
has "/c (INACTIVE" <<<"$status" || fail "c is not INACTIVE: $status"
wait_status m0 "/b (ACTIVE" 60
stop m0
