# Split brain (RELIABILITY.md 17): a served alone and written, then b served
# alone and written.  Assembly with both is refused (exit 1, one line naming
# both with their last-write times, pointing at --force-source) and changes
# nothing; serve --force-source b keeps b's data and copies it over a.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
stop m0
mv "$T/b" "$T/b.away"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0xaa 0 1M' >/dev/null
stop m0
mv "$T/b.away" "$T/b"
mv "$T/a" "$T/a.away"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0xbb 1M 1M' >/dev/null
stop m0
mv "$T/a.away" "$T/a"

before=$(file_sha "$T/a")$(file_sha "$T/b")
when='last write 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC'
expect_error "split brain: $T/a \($when\) and $T/b \($when\).*--force-source COMPONENT m0" \
  bm serve m0 --socket "$T/m0.sock"
[ "$before" = "$(file_sha "$T/a")$(file_sha "$T/b")" ] || fail "the refused serve changed a component"
expect_error "force-source $T/nope is not a component of mirror 'm0'" \
  bm serve m0 --socket "$T/m0.sock" --force-source "$T/nope"

serve m0 --force-source "$T/b"
grep -q "force-source: $T/b is the source" "$T/m0.log" || fail "the log does not say b was forced: $(cat "$T/m0.log")"
wait_complete m0
out=$(qemu-io -f raw "$(uri m0)" -c 'read -P 0 0 1M' -c 'read -P 0xbb 1M 1M') || true
[ "$(grep -c '^read 1048576' <<<"$out")" -eq 2 ] || fail "b's data did not win: $out"
stop m0
same_data "$T/a" "$T/b"
# a's lone write is gone (the choice), and the next start is ordinary
cmp -n "$MIB" "$T/a" /dev/zero >/dev/null || fail "a still holds its lone write"
serve m0
out=$(bm status m0) || true
grep -q COMPLETE <<<"$out" || fail "not COMPLETE after the forced copy: $out"
stop m0
