# An older copy of a deactivated component put back while the mirror was
# stopped: its label still says INACTIVE (as the copy's did), so only its
# bitmap header tells that it is from before a clear.  `activate` copies
# it in full (before: only the regions still dirty, so the writes whose
# bits were cleared while it was ACTIVE in between were missing from it
# and reads through it returned the old data).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
bm label -n -r 1M m0 "$T/a" "$T/b" >/dev/null
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 8M 1M' >/dev/null
bm deactivate m0 "$T/b" || fail "deactivate"
stop m0
cp --sparse=always "$T/b" "$T/b.snap"      # the copy: INACTIVE, old data
serve m0
bm activate --wait m0 "$T/b" >/dev/null || fail "activate"
qemu-io -f raw "$u" -c 'write -P 0x33 8M 1M' >/dev/null
for _ in $(seq 1 100); do bm list m0 | has "Bitmap: .* 0 dirty" && break; sleep 0.1; done
bm list m0 | has "Bitmap: .* 0 dirty" || fail "the bits were not cleared: $(bm list m0)"
bm deactivate m0 "$T/b" || fail "deactivate again"
stop m0
cp --sparse=always "$T/b.snap" "$T/b"      # put back
serve m0
st=$(bm status m0) || true
has "b (INACTIVE" <<<"$st" || fail "b is not INACTIVE: $st"
bm activate --wait m0 "$T/b" >/dev/null || fail "activate the older copy"
has "b: its bitmap is older than the last clear of the others': copied in full" "$T/m0.log" ||
  fail "activate does not say b is copied in full: $(tail -5 "$T/m0.log")"
has "copied (in full)" "$T/m0.log" || fail "not copied in full: $(grep synchronized "$T/m0.log")"
reads_newest 0x33 8M 1M
stop m0
same_data "$T/a" "$T/b"
