# An older copy of a component put back while the mirror was stopped (a
# snapshot restored, an array failing over to a lagging replica) is caught
# at the next start.  Nothing failed in between, so both labels have the
# same genid and syncid, and gmirror's rule takes them for equals; but the
# old one has fewer events (the mirror's DIRTY and clean marks, label
# version 3).  It is never the source, even with the higher priority
# (before: it was, and its old data were served and copied over the newer
# writes), and it is copied in full: the bitmap bits of the writes it
# lacks were cleared when the mirror was marked clean.  Stopped in the
# middle of that copy, the next start copies it in full again (its label
# says FORCE_SYNC: the start rewrote the evidence, its events and bitmap
# header).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
filedisk b "$T/b"
B=$(disk_uri b)
bm label -n m0 "$T/a" "$B"
bm configure -p 9 m0 "$B"            # b would be the source on a tie
events() { bm dump "$1" | sed -n 's/^ *Events: //p'; }
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x11 0 4M' -c 'write -P 0x11 8M 1M' \
  -c 'write -P 0x55 16M 32M' >/dev/null
stop m0
cp --sparse=always "$T/b" "$T/b.snap"   # the snapshot (stopped cleanly)
snap=$(events "$T/b.snap")
[ -n "$snap" ] && [ "$snap" -ge 1 ] || fail "no events in b's label: $(bm dump "$T/b.snap")"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x22 0 1M' -c 'write -P 0x22 8M 1M' >/dev/null
stop m0
now=$(events "$T/a")
[ "$now" -gt "$snap" ] || fail "events did not grow with a DIRTY period: $snap then $now"
[ "$(events "$T/b")" = "$now" ] || fail "a and b differ in events after a clean stop: $now, $(events "$T/b")"
bm dump "$T/b" | has "GenID: $(bm dump "$T/b.snap" | sed -n 's/^ *GenID: //p')" ||
  fail "the genid moved (the case needs the same generation)"
disk_kill b
cp --sparse=always "$T/b.snap" "$T/b"   # put back, slow to write
filedisk b "$T/b" --filter=delay wdelay=200ms
serve m0
bm configure --sync-max 1M m0      # (and slow: stopped in the middle)
out=$(qemu-io -f raw -r "$(uri m0)" -c 'read -P 0x22 0 1M' -c 'read -P 0x11 1M 3M' \
      -c 'read -P 0x22 8M 1M' 2>&1) || true
{ [ "$(grep -c '^read ' <<<"$out")" = 3 ] && ! grep -q "Pattern verification failed" <<<"$out"; } ||
  fail "the older copy's data were served: $out"
has "is an older copy of itself (events $snap, $T/a has $now): copied again" "$T/m0.log" ||
  fail "the start does not say why b is copied: $(cat "$T/m0.log")"
has "b.disk.sock: its bitmap is older than the last clear of the others': copied in full" "$T/m0.log" ||
  fail "the start does not say b is copied in full: $(cat "$T/m0.log")"
wait_status m0 "b.disk.sock (SYNCHRONIZING" 30
sleep 1
stop m0
grep -q "synchronized" "$T/m0.log" && fail "the copy ended before the stop: the case is not shown"
bm dump "$T/b" | has "Flags: .*FORCE_SYNC" || fail "b's label does not say it is copied in full: $(bm dump "$T/b")"
disk_kill b
filedisk b "$T/b"
serve m0
wait_complete m0
has "copied (in full)" "$T/m0.log" || fail "not copied in full after the restart: $(grep synchronized "$T/m0.log")"
stop m0
same_data "$T/a" "$T/b"
cmp -n $MIB "$T/b" <(head -c $MIB /dev/zero | tr '\0' '\042') >/dev/null ||
  fail "b's first MiB is not the newer write"
