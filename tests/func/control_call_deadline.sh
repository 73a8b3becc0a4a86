# A control socket that accepts but never answers (a wedged server) makes
# `blkmirror status` fail with a time-out after about 10 s instead of
# hanging for ever; a verb that changes something says it may still be
# carried out (test control_timeout_may_still_happen).
. "$(dirname "$0")/lib.sh"
need python3
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
python3 -c '
import fcntl, os, socket, sys, time
lock = open(sys.argv[3], "w")          # what a running server holds
fcntl.flock(lock, fcntl.LOCK_EX)
lock.write("%d serve\n" % os.getpid()); lock.flush()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(4)
open(sys.argv[2], "w").close()
conns = []
while True:
    c, _ = s.accept(); conns.append(c)   # read nothing, answer nothing
' "$T/state/m0.ctl" "$T/listening" "$T/state/m0.lock" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -e "$T/listening" ] && break; sleep 0.05; done
[ -e "$T/listening" ] || fail "fake control socket did not start"
start=$SECONDS
rc=0; out=$(timeout 30 "$BLKMIRROR" status m0 2>&1) || rc=$?
[ $rc -ne 124 ] || fail "status hung (killed after 30 s)"
[ $rc -eq 1 ] || fail "status exited $rc: $out"
grep -q "m0: its server (pid [0-9]*) did not answer within 10 s (busy, or stopped)" <<<"$out" || fail "status said: $out"
[ $((SECONDS - start)) -le 15 ] || fail "status took $((SECONDS - start)) s"
echo "ok: $out"
