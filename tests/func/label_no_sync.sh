# label -n: components known identical start ACTIVE, no copy.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
bm dump "$T/b" | has "Flags: NONE" || fail "b should not be synchronizing"
serve m0
out=$(bm status m0)
echo "$out" | has COMPLETE || fail "not COMPLETE at once: $out"
grep -q synchronizing "$T/m0.log" && fail "a sync ran"
stop m0
