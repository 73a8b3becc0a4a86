# TCP on loopback; the export list names the mirror; the default export ""
# is the mirror; an unknown export name is refused cleanly.
. "$(dirname "$0")/lib.sh"
need nbdinfo
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
port=$((20000 + RANDOM % 20000))
serve m0 --tcp "127.0.0.1:$port"
nbdinfo --size "nbd://127.0.0.1:$port/m0" | has -x $((15 * MIB)) || fail "tcp size"
nbdinfo --list "$(uri m0)" | has 'export="m0"' || fail "list does not name m0"
nbdinfo --size "nbd+unix:///?socket=$T/m0.sock" | has -x $((15 * MIB)) || fail "default export"
nbdinfo "nbd+unix:///other?socket=$T/m0.sock" >"$T/out" 2>&1 && fail "unknown export accepted"
grep -qi "export" "$T/out" || fail "unclear error: $(cat "$T/out")"
stop m0
# A bare port binds to loopback only.
port2=$((port + 1))
serve m0 --tcp "$port2"
nbdinfo --size "nbd://127.0.0.1:$port2/m0" | has -x $((15 * MIB)) || fail "bare port"
if command -v ss >/dev/null; then
  ss -ltn | has "127.0.0.1:$port2 " || fail "bare port not bound to 127.0.0.1"
fi
stop m0
