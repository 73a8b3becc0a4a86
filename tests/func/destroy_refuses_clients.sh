# destroy stops a serving mirror (refused while an NBD client is connected,
# unless -f), clears every component's label and lease, removes the mirror
# from the state directory and says the data is still there; then label
# makes a new mirror of the same components.  An unknown mirror is refused.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x61 0 1M' >/dev/null || fail "write failed"
hold_client c1 "$(uri m0)"
expect_error "m0 has 1 NBD connection open .*or use .blkmirror destroy -f m0.$" bm destroy m0
kill -0 "$(server_pid m0)" || fail "the server stopped after a refused destroy"
bm dump "$T/a" >/dev/null || fail "a refused destroy cleared a label"
out=$(bm destroy -f m0) || fail "destroy -f failed"
echo "$out"
grep -q "^m0 stopped cleanly$" <<<"$out" || fail "destroy did not stop the mirror"
grep -q "^Mirror m0 destroyed: labels and leases cleared on $T/a, $T/b; the data is still on them.$" <<<"$out" || fail "destroy said '$out'"
release_client c1
for f in a b; do expect_error "has no blkmirror label" bm dump "$T/$f"; done
[ -z "$(ls -A "$BLKMIRROR_STATE_DIR")" ] || fail "records left: $(ls "$BLKMIRROR_STATE_DIR")"
[ "$(head -c 1M "$T/a" | tr -d '\141' | wc -c)" -eq 0 ] || fail "the data is not on a any more"
expect_error "no mirror named 'm0'" bm destroy m0
# the components are free for a new mirror, without -f
bm label -n m0 "$T/a" "$T/b" || fail "label after destroy failed"
# a stopped mirror is destroyed too
out=$(bm destroy m0) || fail "destroy of a stopped mirror failed"
grep -q "^Mirror m0 destroyed" <<<"$out" || fail "destroy said '$out'"
