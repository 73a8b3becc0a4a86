# After an NBD component dies, every CLI call and every new NBD client still
# gets an answer, and SIGTERM stops the server in a few seconds.  Regression:
# the dead component's I/O thread kept polling the socket number libnbd had
# closed; the next accept() reused that number and the stale poll pinned the
# new socket, so its close() sent no EOF and `blkmirror status` hung.
# STRACE=1 (component_dies_cli_answers_strace.sh) runs the server under
# strace -f, which made the race far more likely.
. "$(dirname "$0")/lib.sh"
need nbdinfo
need qemu-io
[ "${STRACE:-0}" = 1 ] && need strace
disk d0 32M
disk d1 32M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
if [ "${STRACE:-0}" = 1 ]; then
  strace -f -o /dev/null "$BLKMIRROR" serve m0 --socket "$T/m0.sock" >>"$T/m0.log" 2>&1 &
  tracer=$!
  PIDS+=("$tracer")
  for _ in $(seq 1 200); do
    spid=$(pgrep -P "$tracer" || true)
    [ -n "$spid" ] && [ -S "$T/m0.sock" ] && break
    sleep 0.05
  done
  [ -n "$spid" ] || fail "server under strace did not start"
  PIDS+=("$spid")
else
  serve m0
  spid=$(server_pid m0)
fi
for _ in $(seq 1 200); do timeout 10 "$BLKMIRROR" status m0 >/dev/null 2>&1 && break; sleep 0.05; done
u=$(uri m0)
timeout 10 qemu-io -f raw "$u" -c 'write -P 0x11 0 1M' >/dev/null || fail "first write"
disk_kill d1

# answers CMD...: the command must finish within 10 s (exit 0, or 2 for a
# DEGRADED status).
answers() {
  local rc=0
  timeout 10 "$@" >"$T/out" 2>&1 || rc=$?
  [ $rc -eq 124 ] && fail "no answer within 10 s: $*"
  [ $rc -eq 0 ] || [ $rc -eq 2 ] || { cat "$T/out"; fail "'$*' exited $rc"; }
}
for i in $(seq 1 60); do
  answers "$BLKMIRROR" status m0
  answers nbdinfo "$u"
  answers "$BLKMIRROR" list m0
  answers "$BLKMIRROR" stat m0 -c 1 -I 10ms
  # writes make the engine find the dead component and fail it out
  [ $((i % 20)) -eq 1 ] && answers qemu-io -f raw "$u" -c "write -P 0x22 $((i * 4096)) 4096"
done
out=$(timeout 10 "$BLKMIRROR" status m0) || true
grep -q "d1.disk.sock (DISCONNECTED: " <<<"$out" || fail "d1 not DISCONNECTED: $out"
timeout 10 qemu-io -f raw "$u" -c 'read -P 0x11 512k 64k' >"$T/qio" || fail "read after"
grep -qiE 'error|fail' "$T/qio" && { cat "$T/qio"; fail "read errors after"; }

kill -TERM "$spid"
for _ in $(seq 1 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$spid" 2>/dev/null && fail "server still running 10 s after SIGTERM"
grep -q "stopped cleanly" "$T/m0.log" || { cat "$T/m0.log"; fail "no clean stop"; }
echo ok
