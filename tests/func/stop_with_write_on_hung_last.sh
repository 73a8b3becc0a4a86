# A client write waits on the last ACTIVE component, which stopped
# answering (the other deactivated): the server waits for it while it
# serves (a lone disk), but not past a stop: at io-timeout the write fails
# (the client gets EIO) and SIGTERM or stop -f ends the server within
# io-timeout + 5 s (before: it never stopped until the disk answered).
. "$(dirname "$0")/lib.sh"
need qemu-io
for how in sigterm stop; do
  mkimg 64 "a$how"
  hangdisk "p$how" 64
  bm label -n "m$how" "$T/a$how" "$(disk_uri "p$how")"
  serve "m$how" --io-timeout 2
  bm deactivate "m$how" "$T/a$how" >/dev/null
  # dirty, and the region's bit set: the next write goes to the data
  qemu-io -f raw "$(uri "m$how")" -c 'write -P 0x10 0 4k' >/dev/null ||
    fail "the first write failed"
  hang "p$how"
  qemu-io -f raw "$(uri "m$how")" -c 'write -P 0x11 0 64k' >"$T/qio$how" 2>&1 &
  client=$!
  sleep 0.5
  kill -0 "$client" 2>/dev/null || fail "the write did not wait: $(cat "$T/qio$how")"
  pid=$(server_pid "m$how")
  start=$(date +%s%N)
  if [ "$how" = sigterm ]; then
    kill -TERM "$pid"
    rc=0; timeout 30 tail --pid="$pid" -f /dev/null || rc=$?
    [ $rc -eq 0 ] || fail "the server did not stop within 30 s of SIGTERM"
  else
    # (its flush fails too: the stop says it could not mark it clean)
    rc=0; timeout 30 "$BLKMIRROR" stop -f "m$how" >"$T/stop.out" 2>&1 || rc=$?
    [ $rc -eq 1 ] && has "m$how stopped, but not cleanly" "$T/stop.out" ||
      fail "stop -f: exit $rc: $(cat "$T/stop.out")"
  fi
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$how: stopped in $ms ms"
  [ "$ms" -lt 7000 ] || fail "$how took $ms ms with io-timeout 2 s (want < 7 s)"
  rc=0; timeout 10 tail --pid="$client" -f /dev/null || rc=$?
  [ $rc -eq 0 ] || fail "the client still waits"
  grep -q "Input/output error" "$T/qio$how" || fail "the client's write: $(cat "$T/qio$how")"
  grep -q "the last ACTIVE component: its requests fail now (stopping)" "$T/m$how.log" ||
    fail "the log: $(cat "$T/m$how.log")"
  answer "p$how"
done
echo ok
