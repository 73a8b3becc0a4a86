# A component missing at start: the mirror serves DEGRADED, its writes bump
# syncid; when the component returns it is stale and copied again in full.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
mv "$T/b" "$T/b.away"
serve m0
out=$(bm status m0) || true
echo "$out" | has "DEGRADED" || fail "not DEGRADED: $out"
echo "$out" | has "$T/b (ABSENT: .*no such file" || fail "reason missing: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x55 0 4M' >/dev/null
stop m0
mv "$T/b.away" "$T/b"
a_sync=$(bm dump "$T/a" | awk '/SyncID/ {print $2}')
b_sync=$(bm dump "$T/b" | awk '/SyncID/ {print $2}')
[ "$a_sync" -gt "$b_sync" ] || fail "syncid not bumped ($a_sync vs $b_sync)"
serve m0
wait_complete m0
stop m0
same_data "$T/a" "$T/b"
cmp -n $((4 * MIB)) "$T/b" <(head -c $((4 * MIB)) /dev/zero | tr '\0' '\125') || fail "b lacks the degraded write"
