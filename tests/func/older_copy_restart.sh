# An older copy of a component put back while the mirror was stopped (a
# snapshot restored, an array failing over to a lagging replica) is caught
# at the next start.  Nothing failed in between, so both labels have the
# same genid and syncid, and gmirror's rule takes them for equals; but the
# old one has fewer events (the mirror's DIRTY and clean marks, label
# version 3).  It is never the source, even with the higher priority
# (before: it was, and its old data were served and copied over the newer
# writes), and it is copied in full: the bitmap bits of the writes it
# lacks were cleared when the mirror was marked clean.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
bm configure -p 9 m0 "$T/b"          # b would be the source on a tie
events() { bm dump "$1" | sed -n 's/^ *Events: //p'; }
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x11 0 4M' -c 'write -P 0x11 8M 1M' >/dev/null
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
cp --sparse=always "$T/b.snap" "$T/b"   # put back
serve m0
out=$(qemu-io -f raw -r "$(uri m0)" -c 'read -P 0x22 0 1M' -c 'read -P 0x11 1M 3M' \
      -c 'read -P 0x22 8M 1M' 2>&1) || true
[ "$(grep -c '^read ' <<<"$out")" = 3 ] || fail "the older copy's data were served: $out"
wait_complete m0
has "is an older copy of itself (events $snap, $T/a has $now): copied again" "$T/m0.log" ||
  fail "the start does not say why b is copied: $(cat "$T/m0.log")"
has "b: its bitmap is older than the last clear of the others': copied in full" "$T/m0.log" ||
  fail "the start does not say b is copied in full: $(cat "$T/m0.log")"
stop m0
same_data "$T/a" "$T/b"
cmp -n $MIB "$T/b" <(head -c $MIB /dev/zero | tr '\0' '\042') >/dev/null ||
  fail "b's first MiB is not the newer write"
