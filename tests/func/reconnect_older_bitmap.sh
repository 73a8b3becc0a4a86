# A component that comes back as an older copy of itself taken while the
# mirror was busy: no label was written between the copy and its
# departure (the mirror stayed DIRTY), so its label is the one this
# server last wrote, but the settle pass cleared the bits of writes the
# copy lacks.  Its bitmap header tells (each clear bumps clear_seq there):
# it is copied in full, and reads return the newest data (before: only
# the regions still dirty were copied, and reads of the others through it
# returned the old data).
. "$(dirname "$0")/lib.sh"
need qemu-io
nbd_file_mirror
busy_older_copy    # a.old: 0x11 at 8M, which now holds 0x33
[ "$(bm dump "$T/a.img" 2>/dev/null | sed -n 's/^ *Seq: //p')" = "$seq_then" ] ||
  fail "a label was written since the copy: the case is not shown"
disk_kill a
wait_status m0 "a.disk.sock (DISCONNECTED" 30
bm configure --sync-max 1M m0      # its copy: stopped in the middle
touch "$T/stop"; wait "$writer" || fail "the writer failed"
cp --sparse=always "$T/a.old" "$T/a.img"
# back, slow to write (its copy takes ~12 s), and the mirror stopped
# in the middle of the copy: the restart copies it in full again (its
# label says FORCE_SYNC; before, the evidence, its bitmap header, was
# rewritten at once, and the restart copied the dirty regions only)
filedisk a "$T/a.img" --filter=delay wdelay=200ms
wait_status m0 "a.disk.sock (SYNCHRONIZING" 30
has "came back with an older bitmap" "$T/m0.log" || fail "the older copy was not noticed: $(tail -5 "$T/m0.log")"
sleep 1
stop m0
grep -q "synchronized" "$T/m0.log" && fail "the copy ended before the stop: the case is not shown"
bm dump "$T/a.img" | has "Flags: .*FORCE_SYNC" || fail "a's label does not say it is copied in full: $(bm dump "$T/a.img")"
serve m0 --io-timeout 5
wait_status m0 "m0 *COMPLETE" 60
has "copied (in full)" "$T/m0.log" || fail "not copied in full after the restart: $(grep synchronized "$T/m0.log")"
bm dump "$T/a.img" | has "Flags: .*FORCE_SYNC" && fail "FORCE_SYNC left on a after its copy"
reads_newest 0x33 8M 1M
stop m0
cmp -n $((63 * MIB)) "$T/a.img" "$T/b" || fail "a and b differ after the copy"
