# A component that stops answering during a check (hangdisk, io-timeout
# 2 s) does not hang the check: its read is given up at io-timeout, the
# component is disconnected (as the data path would), check names it and
# exits 1 (the comparison is incomplete) within a bound, still comparing
# the two others (a difference between them further on is reported).  Then with only two components, one hanging: check ends
# with "fewer than two" and exit 1.  Close is not held up either.
. "$(dirname "$0")/lib.sh"
mkimg 65 a b
hangdisk h 65
bm label -n m0 "$T/a" "$T/b" "$(disk_uri h)"
serve m0 --io-timeout 2
printf 'X' | dd of="$T/b" bs=1 seek=$((10 * MIB)) conv=notrunc status=none
hang h
rc=0; out=$(timeout 30 "$BLKMIRROR" check m0 2>&1) || rc=$?
[ $rc -ne 124 ] || fail "check hung on a component that does not answer"
[ $rc -eq 1 ] || fail "check exited $rc with a hung component, want 1: $out"
grep -q "m0: $(disk_uri h | sed 's/[?]/[?]/') did not read offset 0: .*; disconnected" <<<"$out" ||
  fail "check did not name the hung component: $out"
grep -q "m0: offset $((10 * MIB)) length 4096: $T/b differs from $T/a" <<<"$out" ||
  fail "check did not go on with the others: $out"
grep -q "check of 'm0' is incomplete" <<<"$out" || fail "check said: $out"
out=$(bm status m0) || true
grep -q "h.disk.sock (DISCONNECTED" <<<"$out" || fail "status: $out"
# Two components, one hanging.
mkimg 65 c
hangdisk g 65
bm label -n m1 "$T/c" "$(disk_uri g)"
serve m1 --io-timeout 2
hang g
rc=0; out=$(timeout 30 "$BLKMIRROR" check m1 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "check of m1 exited $rc, want 1: $out"
grep -q "check of 'm1' failed at .*: fewer than two components could read offset 0" <<<"$out" ||
  fail "check of m1 said: $out"
stop m1
stop m0
