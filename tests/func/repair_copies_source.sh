# repair on a serving mirror: the highest-priority ACTIVE component (equal
# priorities: the lowest index, the first labeled) is copied over the
# ranges where the others differ, whichever copy was changed; afterwards
# check exits 0, the copies are byte-identical over the data area, and the
# mirror's clients read the source's data.
. "$(dirname "$0")/lib.sh"
need nbdsh
mkimg 65 a b c
head -c $((64 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
cp "$T/a" "$T/b"; cp "$T/a" "$T/c"
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
out=$(bm repair m0) || fail "repair of identical copies exited $?: $out"
grep -q "nothing to repair" <<<"$out" || fail "repair said: $out"
# The source (a) changed at 3 MiB; b changed at 9 MiB; c at 9 MiB and 63 MiB.
head -c 4096 /dev/urandom >"$T/x"
dd if="$T/x" of="$T/a" bs=4096 seek=$((3 * 256)) conv=notrunc status=none
dd if="$T/x" of="$T/b" bs=4096 seek=$((9 * 256)) conv=notrunc status=none
dd if="$T/x" of="$T/c" bs=4096 seek=$((9 * 256)) conv=notrunc status=none
dd if="$T/x" of="$T/c" bs=4096 seek=$((63 * 256 + 255)) conv=notrunc status=none
src=$(file_sha "$T/a" $((64 * MIB)))
rc=0; out=$(bm check m0 2>&1) || rc=$?
[ $rc -eq 2 ] || fail "check exited $rc, want 2: $out"
grep -q "offset $((3 * MIB)) length 4096: $T/b and $T/c differ from $T/a" <<<"$out" ||
  fail "check: $out"
grep -q "offset $((9 * MIB)) length 4096: $T/b and $T/c differ from $T/a" <<<"$out" ||
  fail "check: $out"
grep -q "offset $((64 * MIB - 4096)) length 4096: $T/c differs from $T/a" <<<"$out" ||
  fail "check: $out"
out=$(bm repair m0) || fail "repair exited $?: $out"
grep -q "^m0: source $T/a " <<<"$out" || fail "repair did not name its source: $out"
[ "$(grep -c "repaired offset" <<<"$out")" -eq 3 ] || fail "repair said: $out"
grep -q "repaired 3 ranges (12288 bytes)" <<<"$out" || fail "repair said: $out"
out=$(bm check m0) || fail "check after repair exited $?: $out"
# Clients read the source's bytes where it alone differed.
nbdsh -u "$(uri m0)" -c "import sys; sys.stdout.buffer.write(h.pread(4096, $((3 * MIB))))" \
  >"$T/read" || fail "nbdsh read failed"
cmp -s "$T/read" "$T/x" || fail "the mirror does not read the source's data at 3 MiB"
stop m0
[ "$(file_sha "$T/a" $((64 * MIB)))" = "$src" ] || fail "repair changed its source"
cmp -n $((64 * MIB)) "$T/a" "$T/b" || fail "a and b differ after repair"
cmp -n $((64 * MIB)) "$T/a" "$T/c" || fail "a and c differ after repair"
