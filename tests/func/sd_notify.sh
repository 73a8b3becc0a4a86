# serve speaks systemd's notification protocol (NOTIFY_SOCKET, by hand):
# READY=1 once the mirror is assembled and its NBD socket accepts
# connections (the listener connects at that moment and gets the NBD
# greeting) and its control socket exists; STATUS= lines; STOPPING=1 on
# SIGTERM, then the stop phases, then a clean exit; STOPPING=1 and every
# stop phase carry EXTEND_TIMEOUT_USEC (8 x io-timeout + 30 s), so a unit
# whose TimeoutStopSec was not raised with --io-timeout does not kill a
# stop that still flushes; configure --io-timeout, changed live, counts.
# Both a path and an abstract ('@') address work; a NOTIFY_SOCKET nobody
# listens on is ignored.
. "$(dirname "$0")/lib.sh"
LISTENER="$(dirname "$0")/../tools/notify_listener.py"
S=$BLKMIRROR_STATE_DIR
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"

# run_with ADDRESS TAG [IO_TIMEOUT]: serve m0 under a listener at ADDRESS
# (with configure --io-timeout IO_TIMEOUT once it serves, if given),
# SIGTERM it once READY=1 came, and check what the listener saw.
run_with() {
  local addr=$1 tag=$2 io=${3:-30} log=$T/notify.$2
  $PY "$LISTENER" "$addr" "$S/m0.sock" "$S/m0.ctl" "$log" &
  PIDS+=("$!")
  local lpid=$!
  for _ in $(seq 1 200); do [ -e "$log.bound" ] && break; sleep 0.05; done
  [ -e "$log.bound" ] || fail "$tag: the listener did not start"
  NOTIFY_SOCKET=$addr "$BLKMIRROR" serve m0 >>"$T/m0.$tag.log" 2>&1 &
  local spid=$!
  for _ in $(seq 1 400); do grep -qx "READY=1" "$log" 2>/dev/null && break; sleep 0.05; done
  grep -qx "READY=1" "$log" || { cat "$T/m0.$tag.log" >&2; fail "$tag: no READY=1"; }
  grep -qx "nbd-accepts" "$log" || fail "$tag: READY=1 came before the NBD socket accepted connections: $(cat "$log")"
  grep -qx "ctl-exists" "$log" || fail "$tag: READY=1 came before the control socket existed"
  grep -q "^STATUS=serving m0 " "$log" || fail "$tag: no STATUS=serving line: $(cat "$log")"
  grep -q "STOPPING=1" "$log" && fail "$tag: STOPPING=1 before any stop"
  grep -q "EXTEND_TIMEOUT_USEC" "$log" && fail "$tag: EXTEND_TIMEOUT_USEC before any stop"
  [ -n "${3:-}" ] && bm configure --io-timeout "$io" m0
  kill -TERM "$spid"
  local rc=0; wait "$spid" || rc=$?
  [ $rc -eq 0 ] || { cat "$T/m0.$tag.log" >&2; fail "$tag: serve exited $rc on SIGTERM"; }
  for _ in $(seq 1 200); do grep -q "^STATUS=m0: exiting" "$log" && break; sleep 0.05; done
  grep -qx "STOPPING=1" "$log" || fail "$tag: no STOPPING=1 on SIGTERM: $(cat "$log")"
  # STOPPING=1 comes after READY=1, and the stop phases after STOPPING=1.
  local ready stopping flushing
  ready=$(grep -nx "READY=1" "$log" | cut -d: -f1)
  stopping=$(grep -nx "STOPPING=1" "$log" | cut -d: -f1)
  flushing=$(grep -n "^STATUS=m0: flushing" "$log" | cut -d: -f1)
  [ -n "$flushing" ] || fail "$tag: no STATUS= for the flush phase: $(cat "$log")"
  [ "$ready" -lt "$stopping" ] && [ "$stopping" -lt "$flushing" ] ||
    fail "$tag: messages out of order: $(cat "$log")"
  [ "$(grep -cx "READY=1" "$log")" -eq 1 ] || fail "$tag: READY=1 sent more than once"
  # STOPPING=1's datagram and each stop phase's extend the stop timeout
  local want=$(((8 * io + 30) * 1000000))
  awk -v want="EXTEND_TIMEOUT_USEC=$want" '
    /^--$/ { if (stop) { n++; if (!ext) bad = 1 } stop = 0; ext = 0; next }
    /^STOPPING=1$/ || /^STATUS=m0: (draining|flushing)/ { stop = 1 }
    $0 == want { ext = 1 }
    /^EXTEND_TIMEOUT_USEC=/ && $0 != want { wrong = $0 }
    END { if (wrong) { print "wrong: " wrong; exit 1 } exit bad || n < 3 }' "$log" ||
    fail "$tag: STOPPING=1 and the stop phases (at least 3 datagrams) do not all say EXTEND_TIMEOUT_USEC=$want: $(cat "$log")"
  kill "$lpid" 2>/dev/null || true
  wait "$lpid" 2>/dev/null || true
  echo "ok: $tag"
}

run_with "$T/notify.sock" path
run_with "@bmtest-notify-$$-$RANDOM" abstract
run_with "$T/notify60.sock" io60 60

# Nobody listening: serve runs and stops as usual.
NOTIFY_SOCKET=$T/nobody.sock serve m0
stop m0
NOTIFY_SOCKET=not-absolute serve m0
stop m0
echo ok
