# forget NAME removes a stopped mirror's records when its components are
# gone or no longer carry its label; only the missing ones while others
# still do; refused while running, and while every component still carries
# the label unless -f.  Labels are never touched.  (On a running mirror it
# drops the components that are not connected: forget_running.sh.)
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c d e f
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"
bm label -n m2 "$T/e" "$T/f"
S=$BLKMIRROR_STATE_DIR
serve m0
# Running: only components that are not connected would be dropped
# (forget_running.sh); here every one is.
out=$(bm forget m0) || fail "forget on a running mirror failed"
[ "$out" = "m0: nothing to forget: every component is connected" ] || fail "forget said '$out'"
stop m0
expect_error "every component of 'm0' still carries its label.*forget -f m0" bm forget m0
[ -f "$S/m0.components" ] || fail "refused forget removed the record"
# Components gone: the record goes.
rm "$T/c" "$T/d"
[ "$(bm forget m1)" = "Mirror m1 forgotten." ] || fail "forget m1 said otherwise"
[ ! -e "$S/m1.components" ] && [ ! -e "$S/m1.lock" ] || fail "m1 records left: $(ls "$S")"
expect_error "no mirror named 'm1'" bm status m1
# One of two cleared: it stays listed as missing until forget drops it.
bm clear "$T/a" >/dev/null
grep -qx "$T/a" "$S/m0.components" || fail "cleared a not listed as missing"
out=$(bm forget m0) || fail "forget m0 with one component cleared failed"
echo "$out" | has "forgot 1 component .*1 left" || fail "forget said '$out'"
[ "$(cat "$S/m0.components")" = "$T/b" ] || fail "record is not just b: $(cat "$S/m0.components")"
rc=0; bm status m0 >/dev/null || rc=$?
[ $rc -eq 3 ] || fail "m0 status $rc after forget"
# -f forgets a mirror whose components still carry the label; the labels stay.
bm forget -f m2 >/dev/null || fail "forget -f m2 failed"
[ ! -e "$S/m2.components" ] || fail "forget -f left the record"
bm dump "$T/e" | has "Name: m2" || fail "forget touched a label"
expect_usage "usage: blkmirror forget" bm forget
expect_error "no mirror named 'nope'" bm forget nope
