# A client's long WRITE_ZEROES (96 MiB: in pieces of 8 MiB) when both
# components start failing them at different pieces, one slow (each
# zeroing 300 ms) and one fast (100 ms): no copy holds the request, so the
# client gets an error, not an acknowledgement; the first to fail is
# FAILED, the last is kept in service (never failed out), and the mirror
# still serves: a read after it succeeds.  (Each disk is switched to
# failing once its log shows its first pieces: the fast one's 12 pieces
# take 1.2 s, so a poll that comes 0.9 s late still finds pieces left.)
. "$(dirname "$0")/lib.sh"
need qemu-io
zero_errdisk slow 300ms
zero_errdisk fast 100ms
zero_long_client "$(disk_uri slow)" "$(disk_uri fast)"
zero_fails_after slow 1
zero_fails_after fast 3
rc=0
wait "$client" || rc=$?
grep -qiE 'error|fail' "$T/q.out" || { cat "$T/q.out"; fail "the client saw no error although no copy holds its zeroing"; }
out=$(bm status m0) && fail "status exited 0 with components that failed writes: $out"
has "slow.disk.sock (FAILED: write error" <<<"$out" || fail "the first to fail is not FAILED: $out"
has "fast.disk.sock (ACTIVE" <<<"$out" || fail "the last component was failed out: $out"
rm -f "$T/slow.fail" "$T/fast.fail"
qemu-io -f raw "$(uri m0)" -c 'read 0 1M' >"$T/r.out" 2>&1 || { cat "$T/r.out"; fail "a read after the failed zeroing failed"; }
stop m0 -f
has "LastComponentError $(disk_uri fast): write error" "$T/m0.log" ||
  fail "the log does not say the last component failed a write: $(cat "$T/m0.log")"
echo "ok: client error (qemu-io exit $rc), the first FAILED, the last kept"
