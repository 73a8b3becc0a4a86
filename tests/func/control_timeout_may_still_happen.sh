# A verb whose request the server took but did not answer within 10 s (a
# server stopped with SIGSTOP) says the request may still be carried out,
# not that it failed: here the removal happens once the server runs
# again.  Before, remove said only "Connection timed out" and exited 1, and
# the component was then removed all the same.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
pid=$(server_pid m0)
kill -STOP "$pid"
rc=0; out=$(timeout 30 "$BLKMIRROR" remove m0 "$T/b" 2>&1) || rc=$?
kill -CONT "$pid"
[ $rc -eq 1 ] || fail "remove exited $rc: $out"
has "m0: its server took the request but did not answer it within 10 s (busy, or stopped); it may still carry it out: 'blkmirror status m0' shows what it did" <<<"$out" ||
  fail "remove said: $out"
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  has "$T/b" <<<"$out" || break
  sleep 0.1
done
has "$T/b" <<<"$out" && fail "b was not removed after all: $out"
kill -STOP "$pid"
rc=0; out=$(timeout 30 "$BLKMIRROR" stop m0 2>&1) || rc=$?
kill -CONT "$pid"
[ $rc -eq 1 ] || fail "stop exited $rc: $out"
has "m0: its server (pid $pid) took the request 'stop' but did not answer it within 10 s (busy, or stopped); it may still carry it out" <<<"$out" ||
  fail "stop said: $out"
rc=0; wait "$pid" || rc=$?
[ $rc -eq 0 ] || fail "the server exited $rc"
has "stopped cleanly" "$T/m0.log" || fail "not stopped cleanly: $(cat "$T/m0.log")"
