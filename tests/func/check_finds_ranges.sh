# check on a serving mirror: identical copies exit 0; bytes changed behind
# the server's back in one component file at two known offsets exit 2 and
# are reported as exactly those ranges (4 KiB blocks: the granularity),
# naming the component that differs and the reference.
. "$(dirname "$0")/lib.sh"
mkimg 65 a b
head -c $((64 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
# Known bytes where b is changed below: a random byte is 'X' one time in
# 256, and writing 'X' over it would change nothing (this failed in CI).
printf 'a' | dd of="$T/a" bs=1 seek=$((5 * MIB + 100)) conv=notrunc status=none
printf 'aaaaaaaa' | dd of="$T/a" bs=1 seek=$((40 * MIB + 4092)) conv=notrunc status=none
cp "$T/a" "$T/b"
bm label -n m0 "$T/a" "$T/b"
serve m0
out=$(bm check m0) || fail "check of identical copies exited $?: $out"
grep -q "m0: 2 ACTIVE components identical" <<<"$out" || fail "check said: $out"
# One byte in the block at 5 MiB + 100; 8 bytes across the block boundary
# at 40 MiB + 4092 (two blocks: 40 MiB and 40 MiB + 4 KiB).
printf 'X' | dd of="$T/b" bs=1 seek=$((5 * MIB + 100)) conv=notrunc status=none
printf 'ZZZZZZZZ' | dd of="$T/b" bs=1 seek=$((40 * MIB + 4092)) conv=notrunc status=none
rc=0; out=$(bm check m0 2>&1) || rc=$?
[ $rc -eq 2 ] || fail "check exited $rc with differing copies, want 2: $out"
ranges=$(grep "differs from" <<<"$out") || true
want="m0: offset $((5 * MIB)) length 4096: $T/b differs from $T/a
m0: offset $((40 * MIB)) length 8192: $T/b differs from $T/a"
[ "$ranges" = "$want" ] || fail "check reported:
$out
want:
$want"
grep -q "2 ranges (12288 bytes) differ" <<<"$out" || fail "no summary: $out"
# A check changes nothing: the same answer again, and the files still differ.
rc=0; out2=$(bm check m0 2>&1) || rc=$?
[ $rc -eq 2 ] && [ "$out2" = "$out" ] || fail "second check differs: $out2"
cmp -s -n $((64 * MIB)) "$T/a" "$T/b" && fail "check changed the copies"
stop m0
