# A damaged label (one flipped byte) is reported as damaged and that
# component is left out; with every label damaged the mirror refuses to start.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
lab=$(( $(stat -c %s "$T/b") - 4096 ))
flip_byte "$T/b" $((lab + 60))
expect_error "checksum mismatch.*damaged" bm dump "$T/b"
serve m0
out=$(bm status m0) && fail "status of a degraded mirror exited 0"
echo "$out" | has DEGRADED || fail "not DEGRADED: $out"
echo "$out" | has "$T/b (ABSENT: .*checksum mismatch" || fail "reason not shown: $out"
stop m0
flip_byte "$T/a" $((lab + 60))
a_before=$(sha256sum <"$T/a")
rc=0; bm serve m0 --socket "$T/m0.sock" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "serve with no usable label exited $rc"
grep -q "no component has its label" "$T/out" || fail "message: $(cat "$T/out")"
[ "$a_before" = "$(sha256sum <"$T/a")" ] || fail "refused serve changed a"
# A label from a newer blkmirror: named as such.
bm clear "$T/a" "$T/b" >/dev/null
bm label -n m0 "$T/a" "$T/b"
printf '\x09' | dd of="$T/a" bs=1 seek=$((lab + 16)) conv=notrunc status=none
expect_error "version 9 is not one this blkmirror reads" bm dump "$T/a"
