# blkmirror monitor follows a served mirror: an NBD component killed is a
# ComponentDisconnected line within seconds, with --exec PROGRAM EVENT
# MIRROR COMPONENT run for it; its server back gives ComponentBack,
# SyncFinished and Complete; the mirror stopped gives Stopped.  The
# server's stderr has one line per event, with a severity.
. "$(dirname "$0")/lib.sh"
need nbdkit
mkimg 64 a r.img
start_r() { # an NBD export of a file: it comes back with its label
  rm -f "$T/r.sock" "$T/r.pid"
  nbdkit -U "$T/r.sock" -P "$T/r.pid" file "$T/r.img" >>"$T/r.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/r.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/r.pid")")
}
start_r
r="nbd+unix:///?socket=$T/r.sock"
bm label m0 "$T/a" "$r"
serve m0
wait_complete m0
cat >"$T/prog" <<PROG
#!/bin/sh
echo "\$# \$* | \$BLKMIRROR_EVENT_SEVERITY" >>"$T/prog.out"
PROG
chmod +x "$T/prog"
bm monitor --exec "$T/prog" --interval 0.2 >"$T/mon.out" 2>"$T/mon.err" &
mon=$!
PIDS+=("$mon")
wait_for() { # wait_for FILE PATTERN [tenths]
  for _ in $(seq 1 "${3:-300}"); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "--- $1:"; cat "$1" >&2; echo "--- m0.log:"; cat "$T/m0.log" >&2
  fail "no /$2/ in $1"
}
wait_for "$T/mon.err" "following 1 running mirror"
# a complete mirror: nothing reported at the monitor's start
[ -s "$T/mon.out" ] && fail "reported something for a complete mirror: $(cat "$T/mon.out")"
kill -9 "$(cat "$T/r.pid")"
# no client I/O: the health check notices (a write finding it would fail it
# instead, and a failed component does not come back by itself)
wait_for "$T/mon.out" " m0 warning ComponentDisconnected $r "
wait_for "$T/mon.out" " m0 warning Degraded - 1 of 2 components ACTIVE: .*r.sock DISCONNECTED"
wait_for "$T/prog.out" "^3 ComponentDisconnected m0 $r | warning$"
wait_for "$T/prog.out" "^2 Degraded m0 | warning$"
# the server's log: one line per event, with its severity
grep -q "^blkmirror: m0: warning: ComponentDisconnected $r: " "$T/m0.log" ||
  fail "no event line in the server's log: $(cat "$T/m0.log")"
[ "$(grep -c "ComponentDisconnected" "$T/m0.log")" -eq 1 ] || fail "not one line: $(cat "$T/m0.log")"
# --oneshot on the degraded mirror: Degraded and the component, exit 0
out=$(bm monitor --oneshot m0) || fail "--oneshot exited $?"
grep -q " m0 warning Degraded - 1 of 2 components ACTIVE$" <<<"$out" || fail "oneshot: $out"
grep -q " m0 warning ComponentDisconnected $r " <<<"$out" || fail "oneshot: $out"
# its server back: reconnected, copied, complete
start_r
wait_for "$T/mon.out" " m0 notice ComponentBack $r " 600
wait_for "$T/mon.out" " m0 info SyncFinished $r " 600
wait_for "$T/mon.out" " m0 notice Complete - 2 of 2 components ACTIVE$"
wait_for "$T/prog.out" "^2 Complete m0 | notice$"
out=$(bm monitor --oneshot m0) || fail "--oneshot exited $?"
[ -z "$out" ] || fail "oneshot on a complete mirror said: $out"
stop m0
wait_for "$T/mon.out" " m0 notice Stopped - its server is gone"
wait_for "$T/prog.out" "^2 Stopped m0 | notice$"
grep -c "" "$T/mon.out"
cat "$T/mon.out"
# every event line of the server's log has a severity
grep "^blkmirror: m0: [A-Za-z]*: [A-Z][A-Za-z]*[ :]" "$T/m0.log" >"$T/events.log" || true
grep -Evq "^blkmirror: m0: (crit|err|warning|notice|info): " "$T/events.log" && fail "an event line without severity"
kill "$mon"
