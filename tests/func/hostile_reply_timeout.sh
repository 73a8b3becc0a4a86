# A client that stops reading its replies is disconnected once they have made
# no progress for the reply timeout (shortened here with
# BLKMIRROR_REPLY_TIMEOUT_MS), with a log line; the server serves on.
. "$(dirname "$0")/lib.sh"
need nbdinfo
mkimg 40 a b
bm label -n m0 "$T/a" "$T/b"
BLKMIRROR_REPLY_TIMEOUT_MS=1500 serve m0
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 flood 20 $((8 * MIB)) 30000 ||
  fail "the server kept a client that reads no replies"
grep -q "has not read its replies for 1500 ms" "$T/m0.log" || fail "no log line: $(cat "$T/m0.log")"
timeout 10 nbdinfo --size "$(uri m0)" | has -x $((39 * MIB)) || fail "not served afterwards"
stop m0
