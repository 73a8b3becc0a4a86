# A DISCONNECTED component that comes back is judged by its label and its
# lease against what this server last wrote there:
#  - back as an older copy of itself (a snapshot from before later writes
#    whose bitmap bits were cleared since): copied in full, so every read
#    returns the newest data (before: only the bitmap's dirty regions were
#    copied, and reads through it returned the old data);
#  - used by another server meanwhile (its lease taken): not taken, said
#    why (before: taken back and copied from the bitmap, merging a split
#    brain for good).
. "$(dirname "$0")/lib.sh"
need qemu-io
nbd_file_mirror
clean() { for _ in $(seq 1 100); do bm list m0 | has "Bitmap: .* 0 dirty" && return; sleep 0.1; done; fail "bits not cleared: $(bm list m0)"; }
qemu-io -f raw "$u" -c 'write -P 0x11 0 1M' -c flush >/dev/null
clean
cp --sparse=always "$T/a.img" "$T/a.old"
qemu-io -f raw "$u" -c 'write -P 0x33 0 1M' -c flush >/dev/null
clean
sleep 1
disk_kill a
qemu-io -f raw "$u" -c 'write -P 0x44 16M 64k' >/dev/null
wait_status m0 "a.disk.sock (DISCONNECTED" 30
cp --sparse=always "$T/a.old" "$T/a.img"
filedisk a "$T/a.img"
wait_status m0 "m0 *COMPLETE" 60
has "came back with an older label" "$T/m0.log" || fail "the older copy was not noticed: $(tail -5 "$T/m0.log")"
has "copied (in full)" "$T/m0.log" || fail "not copied in full: $(grep synchronized "$T/m0.log")"
cmp -n $((63 * MIB)) "$T/a.img" "$T/b" || fail "a and b differ after the copy"
reads_newest 0x33 0 1M
# another server takes a's lease while a is away
disk_kill a
qemu-io -f raw "$u" -c 'write -P 0x55 16M 64k' >/dev/null
wait_status m0 "a.disk.sock (DISCONNECTED" 30
"$TEST_TOOLS/lease_tool" write "$T/a.img" active otherhost 4242 7
filedisk a "$T/a.img"
for _ in $(seq 1 100); do has "another server (host otherhost" "$T/m0.log" && break; sleep 0.1; done
has "not taken: another server (host otherhost, pid 4242" "$T/m0.log" || fail "a used elsewhere was not refused: $(tail -5 "$T/m0.log")"
out=$(bm status m0) || true   # (exit 2: DEGRADED)
has "a.disk.sock (DISCONNECTED: another server" <<<"$out" || fail "status: $out"
# (before, a DISCONNECTED first row was not parsed and status said 0)
rc=0; bm status m0 >/dev/null || rc=$?
[ $rc -eq 2 ] || fail "status exited $rc while a is DISCONNECTED, want 2 (DEGRADED)"
"$BLKMIRROR" stop m0 >/dev/null 2>&1 || true
