# clear refuses, without -f, to clear the only component that holds a
# stopped mirror's data in full while the others are labelled but
# deactivated: cleared, no start would be possible, not even with
# --force-source (before: cleared without a word, and the mirror could
# no longer be started).  -f clears it.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
bm deactivate m0 "$T/b" >/dev/null
qemu-io -f raw "$(uri m0)" -c 'write -P 0x21 0 1M' >/dev/null
stop m0
a0=$(sha256sum <"$T/a")
expect_error "$T/a is the only copy of mirror 'm0' in full \($T/b is deactivated\): cleared, the mirror cannot start again, not even with --force-source; 'blkmirror clear -f $T/a' clears it anyway" bm clear "$T/a"
[ "$(sha256sum <"$T/a")" = "$a0" ] || fail "the refused clear changed a"
# still startable, with a as the source
serve m0
out=$(bm status m0) || true
has "$T/a (ACTIVE" <<<"$out" || fail "a is not the source: $out"
stop m0
out=$(bm clear -f "$T/a") || fail "clear -f: $out"
out=$(bm dump "$T/a" 2>&1) || true
has "has no blkmirror label" <<<"$out" || fail "a still labelled: $out"
