# The list of differing ranges is bounded: 1100 separate 4 KiB blocks
# changed in one component give the first 1000 ranges and "and 100 more";
# adjacent changed blocks merge into one range.  repair mends them all.
. "$(dirname "$0")/lib.sh"
mkimg 65 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
# Every other block from 8 MiB: 1100 ranges that do not touch; then 16
# adjacent blocks at 40 MiB: one range.
$PY - "$T/b" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    for i in range(1100):
        f.seek(8 * 2**20 + i * 8192)
        f.write(b"\xff" * 4096)
    f.seek(40 * 2**20)
    f.write(b"\xee" * 65536)
PY
rc=0; out=$(bm check m0 2>&1) || rc=$?
[ $rc -eq 2 ] || fail "check exited $rc, want 2: $(tail -n 3 <<<"$out")"
n=$(grep -c "differs from" <<<"$out") || true
[ "$n" -eq 1000 ] || fail "check listed $n ranges, want 1000"
grep -q "^m0: offset $((8 * MIB)) length 4096: $T/b differs from $T/a$" <<<"$out" ||
  fail "first range missing: $(head -n 2 <<<"$out")"
grep -q "^m0: and 101 more ranges (475136 bytes)$" <<<"$out" ||
  fail "no 'and N more' line: $(tail -n 3 <<<"$out")"
grep -q "1101 ranges (4571136 bytes) differ" <<<"$out" || fail "summary: $(tail -n 1 <<<"$out")"
out=$(bm repair m0) || fail "repair exited $?: $(tail -n 3 <<<"$out")"
grep -q "repaired 1101 ranges" <<<"$out" || fail "repair said: $(tail -n 2 <<<"$out")"
out=$(bm check m0) || fail "check after repair exited $?: $out"
stop m0
same_data "$T/a" "$T/b"
