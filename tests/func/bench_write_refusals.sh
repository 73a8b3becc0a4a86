# bench --write destroys data, so it refuses a component of a mirror, one
# with a file system, and a run it cannot ask about (stdin not a terminal)
# without --yes, each with one line and nothing written; with --yes it
# writes, reports the write rows and leaves no label behind.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
mkimg 16 a b c
bm label -n m0 "$T/a" "$T/b"
sums=$(sha256sum "$T/a" "$T/b")
expect_error "$T/a: is a component of mirror 'm0'" bm bench --write --yes "$T/a" "$T/b"
[ "$sums" = "$(sha256sum "$T/a" "$T/b")" ] || fail "refused --write changed a component"
bm clear "$T/a" "$T/b" >/dev/null

mkfs.ext4 -q -F "$T/c" >/dev/null 2>&1
sums=$(sha256sum "$T/b" "$T/c")
expect_error "$T/c: holds a file system \(ext4\)" bm bench --write --yes "$T/b" "$T/c"
[ "$sums" = "$(sha256sum "$T/b" "$T/c")" ] || fail "refused --write changed a component"

sums=$(sha256sum "$T/a" "$T/b")
expect_error "stdin is not a terminal.*--yes" bm bench --write "$T/a" "$T/b" </dev/null
expect_error "stdin is not a terminal.*--yes" bm bench --write "$T/a" "$T/b" < <(echo yes)
[ "$sums" = "$(sha256sum "$T/a" "$T/b")" ] || fail "unconfirmed --write changed a component"
[ ! -e "$BLKMIRROR_STATE_DIR/bench-history.jsonl" ] || fail "a refused run was recorded"

out=$(bm bench --write --yes --size 4M "$T/a" "$T/b" 2>"$T/err") || fail "bench --write exited $?: $(cat "$T/err")"
echo "$out"
grep -q "overwrites" "$T/err" || fail "what is overwritten was not said: $(cat "$T/err")"
for row in "write A alone" "write B alone" "mirror write" "mirror read \(stream\)"; do
  grep -qE "^  $row +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2}$" <<<"$out" || fail "no row '$row'"
done
# It wrote the first 4 MiB (not zeros any more), nothing past them, and
# no label: the temporary mirror keeps its labels in memory.
[ "$(head -c $((4 * MIB)) "$T/a" | tr -d '\0' | wc -c)" -gt 0 ] || fail "a was not written"
[ "$(tail -c +$((4 * MIB + 1)) "$T/a" | tr -d '\0' | wc -c)" -eq 0 ] || fail "a was written past --size"
expect_error "has no blkmirror label" bm dump "$T/a"
expect_error "has no blkmirror label" bm dump "$T/b"
