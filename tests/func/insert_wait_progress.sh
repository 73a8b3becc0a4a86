# insert --wait, its output not a terminal: a line per tenth of the copy,
# each with a rate that is either measured or shown as unknown (--.-),
# never 0.0 MiB/s for a copy that moves (under --sync-max 2M the first line
# said "0.0 MiB/s" before the rate had two samples), and at the end
# "synchronized".
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
head -c $((8 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
bm label -n m0 "$T/a" >/dev/null
serve m0
bm configure --sync-max 2M m0
out=$(bm insert --wait m0 "$T/b") || fail "insert --wait failed: $out"
echo "$out" >&2
lines=$(grep -c "% synchronized, " <<<"$out") || true
[ "$lines" -ge 2 ] || fail "fewer than two progress lines: $out"
! grep -q " 0\.0 MiB/s" <<<"$out" || fail "a progress line says 0.0 MiB/s: $out"
grep "% synchronized, " <<<"$out" | has -vE "% synchronized, ([0-9]+\.[0-9]|--\.-) MiB/s, " &&
  fail "a progress line without a rate: $out"
grep -qE "[1-9][0-9]*\.[0-9] MiB/s, 00:[0-9]{2} left" <<<"$out" || fail "no measured rate: $out"
tail -n 1 <<<"$out" | has -x "$T/b: synchronized" || fail "last line: $out"
same_data "$T/a" "$T/b" || fail "b differs from a"
stop m0
