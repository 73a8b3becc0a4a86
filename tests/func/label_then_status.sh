# label writes a label on every component and records the mirror; a stopped
# mirror's status comes from its labels and exits 3.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label m0 "$T/a" "$T/b"
[ -f "$BLKMIRROR_STATE_DIR/m0.components" ] || fail "state file missing"
rc=0; out=$(bm status m0) || rc=$?
[ $rc -eq 3 ] || fail "status of a stopped mirror exited $rc, want 3"
echo "$out" | has "m0  *STOPPED" || fail "no STOPPED line: $out"
echo "$out" | has "$T/a (clean" || fail "a is not clean: $out"
echo "$out" | has "$T/b (synchronizing 0%" || fail "b is not synchronizing: $out"
bm dump "$T/a" | has "Name: m0" || fail "dump does not show the name"
bm dump "$T/b" | has "Flags: SYNCHRONIZING" || fail "b not flagged SYNCHRONIZING"
