# serve without --socket and --tcp listens on RUN_DIR/NAME.sock (the state
# directory when only BLKMIRROR_STATE_DIR is set, BLKMIRROR_RUN_DIR when
# set) and records the socket's absolute path in STATE_DIR/NAME.socket
# while it runs; a clean stop removes both; --tcp alone records nothing.
. "$(dirname "$0")/lib.sh"
need nbdinfo
S=$BLKMIRROR_STATE_DIR
mkimg 16 a b c d
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"

# start_bg NAME [args]: serve in the background; waits until status answers.
start_bg() {
  local name=$1; shift
  "$BLKMIRROR" serve "$name" "$@" >>"$T/$name.log" 2>&1 &
  eval "SERVER_PID_$name=$!"
  for _ in $(seq 1 200); do
    local rc=0; "$BLKMIRROR" status "$name" >/dev/null 2>&1 || rc=$?
    { [ $rc -eq 0 ] || [ $rc -eq 2 ]; } && return 0
    kill -0 "$(server_pid "$name")" 2>/dev/null || { cat "$T/$name.log" >&2; fail "server for $name died"; }
    sleep 0.05
  done
  fail "server for $name did not start"
}
recorded() { cat "$S/$1.socket" 2>/dev/null || true; }

# 1. Only BLKMIRROR_STATE_DIR: the socket goes in the state directory.
start_bg m0
[ -S "$S/m0.sock" ] || fail "no default socket at $S/m0.sock"
[ "$(recorded m0)" = "$S/m0.sock" ] || fail "NAME.socket says '$(recorded m0)', want $S/m0.sock"
[ "$(wc -l <"$S/m0.socket")" -eq 1 ] || fail "NAME.socket is not one line"
nbdinfo --size "nbd+unix:///m0?socket=$(recorded m0)" >/dev/null || fail "nbdinfo on the recorded socket failed"
if command -v jq >/dev/null; then
  j=$(bm status --json m0) || fail "status --json m0 exited $?"
  jq -e --arg s "$S/m0.sock" '.[0].socket == $s' <<<"$j" >/dev/null || fail "status --json does not show the socket: $j"
fi
stop m0
if command -v jq >/dev/null; then
  j=$(bm status --json m0) || [ $? -eq 3 ] || fail "status --json m0 of a stopped mirror failed"
  jq -e '.[0].socket == null' <<<"$j" >/dev/null || fail "a stopped mirror shows a socket: $j"
fi
[ ! -e "$S/m0.sock" ] || fail "the default socket is left after a clean stop"
[ ! -e "$S/m0.socket" ] || fail "NAME.socket is left after a clean stop"

# 2. BLKMIRROR_RUN_DIR wins (and is created).
BLKMIRROR_RUN_DIR=$T/run start_bg m0
[ -S "$T/run/m0.sock" ] || fail "no socket in BLKMIRROR_RUN_DIR"
[ ! -e "$S/m0.sock" ] || fail "a socket in the state directory though BLKMIRROR_RUN_DIR is set"
[ "$(recorded m0)" = "$T/run/m0.sock" ] || fail "NAME.socket says '$(recorded m0)', want $T/run/m0.sock"
# 3. A relative --socket is recorded as an absolute path.
(cd "$T" && exec "$BLKMIRROR" serve m1 --socket rel.sock >>"$T/m1.log" 2>&1) &
SERVER_PID_m1=$!
for _ in $(seq 1 200); do [ -s "$S/m1.socket" ] && break; sleep 0.05; done
[ "$(recorded m1)" = "$T/rel.sock" ] || fail "relative --socket recorded as '$(recorded m1)', want $T/rel.sock"
nbdinfo --size "nbd+unix:///m1?socket=$(recorded m1)" >/dev/null || fail "nbdinfo on m1's recorded socket failed"
# 4. A server killed leaves its record (and its socket); the next one
#    replaces both.
kill -9 "$SERVER_PID_m0"; wait "$SERVER_PID_m0" 2>/dev/null || true
[ "$(recorded m0)" = "$T/run/m0.sock" ] || fail "record gone after kill -9 (it cannot be removed then)"
start_bg m0
[ "$(recorded m0)" = "$S/m0.sock" ] || fail "record not rewritten by the next server: '$(recorded m0)'"
stop m0
stop m1
[ ! -e "$S/m1.socket" ] || fail "m1's record is left after a clean stop"
[ ! -e "$T/rel.sock" ] || fail "m1's socket is left after a clean stop"

# 5. --tcp alone: no Unix socket, nothing recorded.
port=$((20000 + RANDOM % 20000))
start_bg m0 --tcp "127.0.0.1:$port"
[ ! -e "$S/m0.sock" ] || fail "--tcp alone also made the default socket"
[ ! -e "$S/m0.socket" ] || fail "--tcp alone recorded a socket"
stop m0

# 6. The default socket follows the same safety rule as --socket: a file
#    there is never replaced.
echo data >"$S/m0.sock"
expect_error "$S/m0.sock is a regular file" bm serve m0
[ "$(cat "$S/m0.sock")" = data ] || fail "the file at the default socket path was changed"
echo "ok"
