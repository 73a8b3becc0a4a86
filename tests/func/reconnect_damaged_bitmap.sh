# An older copy of a component comes back while the mirror runs, taken
# while the mirror was busy (no label written since: its label is the one
# this server last wrote), and its bitmap header is damaged too (torn,
# written over): the header cannot tell how old it is, so the component
# is not trusted to lack only the regions the bitmap names and is copied
# in full (bitmap.c bm_bitmap_judge: "its bitmap cannot be read").
# Without that rule only the still-dirty regions were copied, and reads
# of the others through it returned the old data (0x11 at 8M).
. "$(dirname "$0")/lib.sh"
need qemu-io
nbd_file_mirror
busy_older_copy    # a.old: 0x11 at 8M, which now holds 0x33
disk_kill a
wait_status m0 "a.disk.sock (DISCONNECTED" 30
touch "$T/stop"; wait "$writer" || fail "the writer failed"
[ "$(bm dump "$T/a.img" 2>/dev/null | sed -n 's/^ *Seq: //p')" = "$seq_then" ] ||
  fail "a label was written since the copy: the case is not shown"
off=$(bm dump "$T/a.old" | sed -n 's/^ *Bitmap: [0-9]* bytes at \([0-9]*\),.*/\1/p')
[ -n "$off" ] && [ "$off" -gt 0 ] || fail "no bitmap offset in a's label: $(bm dump "$T/a.old")"
# its header block (the bitmap's first 4 KiB) written over
dd if=/dev/urandom of="$T/a.old" bs=4096 seek=$((off / 4096)) count=1 conv=notrunc status=none
cp --sparse=always "$T/a.old" "$T/a.img"
filedisk a "$T/a.img"
wait_status m0 "m0 *COMPLETE" 60
has "its bitmap cannot be read" "$T/m0.log" ||
  fail "the damaged header was not noticed: $(tail -5 "$T/m0.log")"
has "copied (in full)" "$T/m0.log" ||
  fail "a was not copied in full: $(grep -i "synchron\|copied" "$T/m0.log")"
reads_newest 0x33 8M 1M
stop m0
cmp -n $((63 * MIB)) "$T/a.img" "$T/b" || fail "a and b differ after the copy"
