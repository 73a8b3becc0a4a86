# An older copy of a component taken while the mirror was busy, put back
# after the server crashed: both labels say DIRTY with the same genid,
# syncid and events (no label was written between the copy and the
# crash), so only the bitmap headers tell: every settle pass bumps
# clear_seq in each of them.  The copy with the older header is never the
# source, even with the higher priority (before: it was, and its old data
# were copied over the acknowledged writes of the other), and is copied
# in full; `clear` of the newer one is refused.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
bm label -n -r 1M m0 "$T/a" "$T/b" >/dev/null
bm configure -p 9 m0 "$T/b"          # b would be the source on a tie
serve m0
u=$(uri m0)
keep_writing m0                      # region 0, every 0.2 s: never idle
qemu-io -f raw "$u" -c 'write -P 0x11 8M 1M' -c flush >/dev/null
cp --sparse=always "$T/b" "$T/b.old"   # the copy, taken busy
qemu-io -f raw "$u" -c 'write -P 0x33 8M 1M' -c flush >/dev/null
for _ in $(seq 1 200); do [ "$(bitmap_dirty m0)" = 1 ] && break; sleep 0.1; done
[ "$(bitmap_dirty m0)" = 1 ] || fail "the settle pass did not clear 8M's bit: $(bm list m0)"
touch "$T/stop"
kill -9 "$(server_pid m0)"           # the crash, still DIRTY
wait "$writer" 2>/dev/null || true
ev=$(bm dump "$T/a" | sed -n 's/^ *Events: //p')
[ "$(bm dump "$T/b.old" | sed -n 's/^ *Events: //p')" = "$ev" ] ||
  fail "the copy's events differ: the case is not shown"
bm dump "$T/a" | has "Flags: DIRTY" || fail "a is not DIRTY: $(bm dump "$T/a")"
cp --sparse=always "$T/b.old" "$T/b"   # put back
# `clear` of a would leave the older copy: refused (it asks the same
# history as serve, headers included)
expect_error "is the only up-to-date copy" bm clear "$T/a"
bm dump "$T/a" | has "Name: m0" || fail "a's label was cleared"
serve m0
out=$(qemu-io -f raw -r "$u" -c 'read -P 0x33 8M 1M' 2>&1) || true
{ grep -q "^read " <<<"$out" && ! grep -q "Pattern verification failed" <<<"$out"; } ||
  fail "the older copy's data were served: $out"
has "b is an older copy of itself (bitmap clear [0-9]*, $T/a has [0-9]*): copied again" "$T/m0.log" ||
  fail "the start does not say why b is copied: $(tail -5 "$T/m0.log")"
wait_complete m0
has "copied (in full)" "$T/m0.log" || fail "not copied in full: $(grep synchronized "$T/m0.log")"
reads_newest 0x33 8M 1M
stop m0
same_data "$T/a" "$T/b"
# The same copy taken busy, the mirror then stopped cleanly (no crash):
# the stop's clean mark counts, so the copy's DIRTY label is older (before
# the stop counted, its label said DIRTY at the count the clean labels
# had, and it was the source again)
serve m0
keep_writing m0
qemu-io -f raw "$u" -c 'write -P 0x55 8M 1M' -c flush >/dev/null
cp --sparse=always "$T/b" "$T/b.old2"
qemu-io -f raw "$u" -c 'write -P 0x66 8M 1M' -c flush >/dev/null
for _ in $(seq 1 200); do [ "$(bitmap_dirty m0)" = 1 ] && break; sleep 0.1; done
[ "$(bitmap_dirty m0)" = 1 ] || fail "the settle pass did not clear 8M's bit: $(bm list m0)"
touch "$T/stop"; wait "$writer" || fail "the writer failed"
stop m0
cp --sparse=always "$T/b.old2" "$T/b"
: >"$T/m0.log"
serve m0
wait_complete m0
has "b is an older copy of itself (events" "$T/m0.log" ||
  fail "the copy put back after a clean stop was not noticed: $(tail -5 "$T/m0.log")"
reads_newest 0x66 8M 1M
stop m0
same_data "$T/a" "$T/b"
