# Connections beyond the limit (128 by default) are closed at once with a log
# line; the ones already open keep working, and a place freed is reused.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 conns 128 || fail "connection limit"
grep -q "128 NBD connections already (the limit)" "$T/m0.log" || fail "no log line: $(cat "$T/m0.log")"
stop m0
