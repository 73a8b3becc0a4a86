# A component whose NBD server accepts the connection and then never
# answers holds nothing up before the mirror runs: `serve` leaves it out
# after its label read's io-timeout and serves the other, and takes it
# back (copied) once it answers; `status` of the stopped mirror shows it
# ABSENT ("does not answer") after its 5 s wait.  Before, serve and status
# waited for its label for ever (the synchronous NBD calls had no
# deadline: backend.h bm_backend_sync_timeout_ms).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
hangdisk r 32
R=$(disk_uri r)
bm label -n m0 "$T/a" "$R" >/dev/null
hang r

t0=$(date +%s%N)
serve m0 --io-timeout 2
echo "serve started in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
out=$(bm status m0) || true
has "DEGRADED" <<<"$out" || fail "not DEGRADED: $out"
has "r.disk.sock (ABSENT" <<<"$out" || fail "r not ABSENT: $out"
has "leaving out .*r.disk.sock: does not answer: its label was not read within 2 s" "$T/m0.log" ||
  fail "the log does not say why: $(cat "$T/m0.log")"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x6b 1M 64k' >/dev/null || fail "write while r hangs"

answer r   # it answers again: the recovery thread takes it back
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x6b 1M 64k' >"$T/read.out" 2>&1 || fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
stop m0
# the copy reached r: it holds the write
cmp -n $((64 * 1024)) -i $((1024 * 1024)):$((1024 * 1024)) "$T/a" "$T/r.img" || fail "r does not hold the write"

hang r
t0=$(date +%s%N)
out=$(timeout 60 "$BLKMIRROR" status m0 2>&1) || true
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "status of the stopped mirror took $ms ms"
[ "$ms" -lt 15000 ] || fail "status took $ms ms: $out"
has "r.disk.sock (ABSENT: .*does not answer: its label was not read within 5 s" <<<"$out" || fail "status: $out"
has "$T/a (clean" <<<"$out" || fail "status does not show a: $out"
answer r
