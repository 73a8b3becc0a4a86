# rebuild of a DISCONNECTED component that its reconnects find but do not
# take (its file was cut short while served: "it came back smaller") says
# so and gives the way forward (remove, then insert a disk large enough),
# instead of "it is reconnected automatically" (it never would be); the
# way it gives works.  So is one back without its label (a blank disk at
# its path).  One that is simply away still gets the old answer.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
truncate -s 8M "$T/b"
wait_status m0 "$T/b (DISCONNECTED: it came back smaller" 10
size=$(( $(stat -c %s "$T/a") / 4096 * 4096 ))
out=$(expect_error "is DISCONNECTED and is not taken back \\(it came back smaller \\(8388608 bytes\\)\\); 'blkmirror remove m0 $T/b', then 'blkmirror insert m0 DISK' copies a disk of at least $size bytes" \
  bm rebuild m0 "$T/b") || exit 1
echo "$out" >&2
bm remove m0 "$T/b" >/dev/null || fail "remove of b failed"
bm insert --wait m0 "$T/c" >/dev/null || fail "insert of c failed"
bm status m0 | has COMPLETE || fail "not COMPLETE: $(bm status m0)"
# away (its file deleted): reconnected automatically once it is back
rm "$T/c"
wait_status m0 "$T/c (DISCONNECTED" 10
expect_error "is DISCONNECTED: it is reconnected automatically" bm rebuild m0 "$T/c" >/dev/null
# back as a blank disk (its label gone): refused too (before: retried for
# ever, and rebuild said it would be reconnected)
truncate -s 16M "$T/c"
wait_status m0 "$T/c (DISCONNECTED: it came back without its label (no blkmirror label)" 10
expect_error "is DISCONNECTED and is not taken back \\(it came back without its label" \
  bm rebuild m0 "$T/c" >/dev/null
stop m0
