# repair writes like a client: the bits of the regions it rewrites are on
# disk first, so a crash in the middle of a repair leaves them marked and
# the next start copies them again (before, a half-repaired copy was left
# with no mark, and no resync looked there).  A component kept INACTIVE
# holds every bit (no clear while degraded), so the list right after the
# repair shows exactly what the repair marked.
. "$(dirname "$0")/lib.sh"
mkimg 17 a b c
bm label -n -r 1M m0 "$T/a" "$T/b" "$T/c"
serve m0
bm deactivate m0 "$T/c"
out=$(bm list m0)
grep -q "Bitmap: 1024 KiB regions, 16 regions, 0 dirty" <<<"$out" ||
  fail "bits before the repair: $(grep 'KiB regions' <<<"$out")"
head -c 8192 /dev/urandom | dd of="$T/b" bs=4096 seek=$((5 * 256 + 7)) conv=notrunc status=none
out=$(bm repair m0) || fail "repair exited $?: $out"
grep -q "repaired 1 range (8192 bytes)" <<<"$out" || fail "repair said: $out"
out=$(bm list m0)
grep -q "Bitmap: 1024 KiB regions, 16 regions, 1 dirty: 5$" <<<"$out" ||
  fail "the repaired region is not marked: $(grep 'KiB regions' <<<"$out")"
out=$(bm dump "$T/b")
grep -q "BitmapState: 1024 KiB regions, 16 regions, 1 dirty: 5;" <<<"$out" ||
  fail "the mark is not on b's disk: $(grep BitmapState <<<"$out")"
bm activate --wait m0 "$T/c" >/dev/null || fail "activate --wait failed"
stop m0
same_data "$T/a" "$T/b"
same_data "$T/a" "$T/c"
echo ok
