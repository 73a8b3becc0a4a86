# A hostile NBD client (bad magic, unknown options and commands, huge
# lengths, out-of-range offsets, truncated packets, disconnects mid-request)
# gets protocol errors or a closed connection; the server keeps serving
# everyone else, and nothing reaches the disks.
. "$(dirname "$0")/lib.sh"
need nbdinfo
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
before="$(file_sha "$T/a" $((15 * MIB))) $(file_sha "$T/b" $((15 * MIB)))"
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 || fail "hostile cases failed"
# Twice more, from two connections at once, while a good client works.
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 >/dev/null &
h1=$!
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 >/dev/null &
h2=$!
nbdinfo --size "$(uri m0)" | has -x $((15 * MIB)) || fail "good client refused"
wait $h1 || fail "hostile run 2"
wait $h2 || fail "hostile run 3"
kill -0 "$(server_pid m0)" || fail "server died"
bm status m0 | has COMPLETE || fail "mirror not COMPLETE"
stop m0
after="$(file_sha "$T/a" $((15 * MIB))) $(file_sha "$T/b" $((15 * MIB)))"
[ "$before" = "$after" ] || fail "hostile input changed data"
