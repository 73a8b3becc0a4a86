# An ABSENT NBD component whose server comes back but never answers reads
# holds nothing: its label read has the io-timeout and its connect the
# connect deadline (10 s), it stays ABSENT, a verb that changes components
# (forget) answers at once and stop ends within that deadline.  Before,
# the recovery thread waited for the label for ever while holding the lock
# those verbs take, and stop never ended.
. "$(dirname "$0")/lib.sh"
mkimg 32 a b
hangdisk r 32
bm label -n m0 "$T/a" "$T/b" "$(disk_uri r)"
disk_kill r; rm -f "$T/r.disk.sock" "$T/r.disk.pid"
serve m0 --io-timeout 2
out=$(bm status m0) || true
grep -q "r.disk.sock (ABSENT" <<<"$out" || fail "not ABSENT: $out"
hang r
hangdisk r 32
sleep 4   # tried after 1 s and 2 s: a label read in flight now
out=$(timeout 10 "$BLKMIRROR" status m0) || true
grep -q "r.disk.sock (ABSENT" <<<"$out" || fail "status did not answer, or not ABSENT: $out"
start=$(date +%s)
timeout 20 "$BLKMIRROR" forget m0 >"$T/forget.out" 2>&1 || { cat "$T/forget.out"; fail "forget did not answer"; }
echo "forget took $(( $(date +%s) - start )) s"
pid=$(server_pid m0)
timeout 20 "$BLKMIRROR" stop m0 >/dev/null || fail "stop did not end"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the server still runs after stop"
echo "forget and stop took $(( $(date +%s) - start )) s"
answer r
