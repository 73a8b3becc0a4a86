# stop refuses while NBD clients are connected, saying how many and from
# where (the pid of a unix socket client, the address of a tcp one); the
# mirror keeps serving; stop -f drains them and stops cleanly.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
port=$((20000 + RANDOM % 20000))
serve m0 --tcp "$port"
hold_client c1 "$(uri m0)"
hold_client c2 "nbd://127.0.0.1:$port/m0"
out=$(expect_error "^blkmirror: m0 has 2 NBD connections open \(.*stop -f m0" bm stop m0)
echo "$out" | has "pid $(eval echo \$CLIENT_PID_c1) (qemu-io) on the unix socket" || fail "unix client not named: $out"
echo "$out" | has -E "tcp 127\.0\.0\.1:[0-9]+" || fail "tcp client not named: $out"
kill -0 "$(server_pid m0)" || fail "the server stopped anyway"
bm status m0 | has COMPLETE || fail "not serving after a refused stop"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 0 64k' >/dev/null || fail "no I/O after a refused stop"
release_client c2
expect_error "m0 has 1 NBD connection open" bm stop m0
out=$(bm stop -f m0) || fail "stop -f failed"
[ "$out" = "m0 stopped cleanly" ] || fail "stop -f said '$out'"
# stop returned: the server has exited, with clean labels.
kill -0 "$(server_pid m0)" 2>/dev/null && fail "server still running after stop returned"
for f in a b; do bm dump "$T/$f" | has "Flags: NONE" || fail "$f not clean"; done
release_client c1
# The written data is on both components.
same_data "$T/a" "$T/b"
[ "$(head -c 65536 "$T/b" | tr -d '\132' | wc -c)" -eq 0 ] || fail "the write is not on b"
