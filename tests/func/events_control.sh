# The control command "events SINCE": a served mirror's state changes, in
# order, after SINCE, with the current sequence and instance; "components"
# gives each component's state.  Bad requests get one error line.
. "$(dirname "$0")/lib.sh"
mkimg 64 a b
bm label m0 "$T/a" "$T/b"
serve m0
wait_complete m0
ctl() { # ctl NAME REQUEST: the raw reply of the control socket
  "$PY" - "$BLKMIRROR_STATE_DIR/$1.ctl" "$2" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    out += d
sys.stdout.write(out.decode())
PYEOF
}
out=$(ctl m0 "events 0")
echo "$out"
head -1 <<<"$out" | has -x ok || fail "not ok: $out"
sed -n 2p <<<"$out" | has -E "^current [0-9]+ instance [0-9a-f]{16} lost 0$" || fail "header: $out"
events=$(grep "^event" <<<"$out" | cut -f5 | tr '\n' ' ')
[ "$events" = "Started Degraded SyncStarted SyncFinished Complete " ] || fail "events: $events"
# every line: 8 tab-separated fields, severities from syslog's words
grep "^event" <<<"$out" | awk -F'\t' 'NF != 8 || $4 !~ /^(crit|err|warning|notice|info)$/ || $6 != "m0" { exit 1 }' ||
  fail "malformed event lines: $out"
grep -q "^event	3	[0-9]*	info	SyncStarted	m0	$T/b	copying from offset 0 of " <<<"$out" || fail "SyncStarted line: $out"
grep -q "^event	2	[0-9]*	warning	Degraded	m0	-	1 of 2 components ACTIVE: $T/b SYNCHRONIZING$" <<<"$out" || fail "Degraded line: $out"
cur=$(sed -n 2p <<<"$out" | cut -d' ' -f2)
# the events after 3 only
out=$(ctl m0 "events 3")
[ "$(grep -c "^event" <<<"$out")" -eq $((cur - 3)) ] || fail "events 3: $out"
grep "^event" <<<"$out" | sed -n 1p | has "^event	4	" || fail "events 3 starts elsewhere: $out"
# nothing new
out=$(ctl m0 "events $cur")
grep -q "^event" <<<"$out" && fail "events $cur: $out"
# bad requests
for bad in "events" "events x" "events -1" "events 1 2"; do
  out=$(ctl m0 "$bad")
  [ "$out" = "error usage: events SINCE (a sequence number, 0 for all)" ] || fail "'$bad': $out"
done
out=$(ctl m0 components)
grep -q "^comp	0	ACTIVE	-1	$T/a	$" <<<"$out" || fail "components: $out"
grep -q "^comp	1	ACTIVE	-1	$T/b	$" <<<"$out" || fail "components: $out"
# the server's log: one line per event, in the same words
for e in Started Degraded SyncStarted SyncFinished Complete; do
  [ "$(grep -c "^blkmirror: m0: [a-z]*: $e[ :]" "$T/m0.log")" -eq 1 ] || fail "$e not once in the log: $(cat "$T/m0.log")"
done
# a restart is a new instance, numbered from 1 again
inst=$(ctl m0 "events 0" | sed -n 2p | cut -d' ' -f4)
stop m0
serve m0
out=$(ctl m0 "events 0")
inst2=$(sed -n 2p <<<"$out" | cut -d' ' -f4)
[ "$inst" != "$inst2" ] || fail "same instance after a restart"
grep "^event" <<<"$out" | sed -n 1p | has "^event	1	[0-9]*	info	Started	" || fail "after restart: $out"
stop m0
