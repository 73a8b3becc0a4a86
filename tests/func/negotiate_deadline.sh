# A client that connects and says nothing, or trickles its negotiation a
# byte at a time, is dropped at the negotiation deadline (shortened here
# with BLKMIRROR_NEGOTIATE_TIMEOUT_MS); a normal client is unaffected.
. "$(dirname "$0")/lib.sh"
need nbdinfo
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
BLKMIRROR_NEGOTIATE_TIMEOUT_MS=1000 serve m0
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 silent 900 20000 || fail "silent client kept"
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 silent 900 20000 trickle || fail "trickling client kept"
grep -q "did not finish negotiating in 1000 ms" "$T/m0.log" || fail "no log line: $(cat "$T/m0.log")"
nbdinfo --size "$(uri m0)" | has -x $((15 * MIB)) || fail "a normal client was refused"
stop m0
