# serve's limits are options: --max-connections closes the connection past
# the limit (the others still serve); wrong values are usage errors.
. "$(dirname "$0")/lib.sh"
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b"
expect_usage "max-connections '0'" bm serve m0 --socket "$T/x.sock" --max-connections 0
expect_usage "max-inflight '1k'" bm serve m0 --socket "$T/x.sock" --max-inflight 1k
expect_usage "max-inflight-total 'lots'" bm serve m0 --socket "$T/x.sock" --max-inflight-total lots
expect_usage "io-timeout '9999'" bm serve m0 --socket "$T/x.sock" --io-timeout 9999
expect_usage "io-timeout 'soon'" bm configure --io-timeout soon m0
[ -e "$T/x.sock" ] && fail "a refused serve left its socket"
serve m0 --max-connections 4 --max-inflight 8M --max-inflight-total 16M
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 conns 4 || fail "the 5th connection was not closed"
grep -q "4 NBD connections already (the limit)" "$T/m0.log" || fail "no log line for the limit"
stop m0
