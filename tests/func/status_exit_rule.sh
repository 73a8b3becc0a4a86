# status without a name: the worst state among running mirrors (2 if one
# is DEGRADED); stopped mirrors are listed but never hide that.  Named
# mirrors: 2 if one is DEGRADED, else 3 if one is stopped.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c d
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"
# m0 runs DEGRADED: its component b was cleared while it was stopped and
# stays listed as missing (gmirror keeps counting a lost disk).
bm clear "$T/b" >/dev/null
grep -qx "$T/b" "$BLKMIRROR_STATE_DIR/m0.components" || fail "cleared b no longer listed"
serve m0
rc=0; out=$(bm status m0) || rc=$?
[ $rc -eq 2 ] || fail "status m0 exited $rc, want 2: $out"
echo "$out" | has "$T/b (ABSENT: .*has no blkmirror label" || fail "b not shown missing: $out"
# list and status agree on the component count.
bm list m0 | has "^Components: 2$" || fail "list does not say 2 components"
[ "$(echo "$out" | grep -c "$T/")" -eq 2 ] || fail "status does not show 2 components"
# m1 is stopped: listed, but the exit status is m0's.
rc=0; out=$(bm status) || rc=$?
[ $rc -eq 2 ] || fail "status exited $rc with one DEGRADED and one stopped mirror, want 2"
echo "$out" | has "m1  *STOPPED" || fail "stopped m1 not listed: $out"
rc=0; bm status m1 m0 >/dev/null || rc=$?
[ $rc -eq 2 ] || fail "status m1 m0 exited $rc, want 2"
rc=0; bm status m1 >/dev/null || rc=$?
[ $rc -eq 3 ] || fail "status m1 exited $rc, want 3"
rc=0; bm status m0 nope >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "status with an unknown name exited $rc, want 1"
stop m0
# Nothing running: 3; m1 running COMPLETE, m0 stopped: 0 without names.
rc=0; bm status >/dev/null || rc=$?
[ $rc -eq 3 ] || fail "status with nothing running exited $rc, want 3"
serve m1
rc=0; bm status >/dev/null || rc=$?
[ $rc -eq 0 ] || fail "status exited $rc with m1 COMPLETE and m0 stopped, want 0"
stop m1
