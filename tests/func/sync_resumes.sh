# A sync interrupted by a clean stop resumes from its checkpoint at the next
# start (never from a point past what was copied), and ends identical.
. "$(dirname "$0")/lib.sh"
need nbdcopy
mkimg 160 a
head -c $((159 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
disk slow 160M --filter=rate rate=400M burstiness=0.1   # ~50 MB/s: the copy takes a few seconds
bm label m0 "$T/a" "$(disk_uri slow)"
serve m0
wait_sync_pct m0 45
stop m0
off=$(bm dump "$(disk_uri slow)" | awk '/SyncOffset/ {print $2}')
bm dump "$(disk_uri slow)" | has "Flags: SYNCHRONIZING" || fail "target not flagged after the stop"
[ "$off" -gt 0 ] || fail "no checkpoint saved"
serve m0
grep -q "SyncStarted .*: copying from offset $off " "$T/m0.log" || { cat "$T/m0.log"; fail "did not resume at $off"; }
wait_complete m0
stop m0
nbdcopy "$(disk_uri slow)" "$T/slow.img"
cmp -n $((159 * MIB)) "$T/a" "$T/slow.img" || fail "target differs after resumed sync"
