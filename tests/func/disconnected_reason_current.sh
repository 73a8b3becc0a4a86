# While a DISCONNECTED component is being brought back, status and list
# say both why it left and how the attempts to bring it back end now
# ("last try N s ago: ..."), so the reason shown never goes stale: before,
# status kept saying why it left (the write that failed) while every
# reconnect failed for another reason (its server gone).  A successful
# reconnect clears both.  status --json shows the component and both.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a r.img
filedisk r "$T/r.img"
bm label -n m0 "$T/a" "$(disk_uri r)" >/dev/null
serve m0
disk_kill r; rm -f "$T/r.disk.sock"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x32 1M 1M' >/dev/null || fail "write after r died"
out=
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  has -E "r.disk.sock \(DISCONNECTED: .*; last try [0-9]+ s ago: " <<<"$out" && break
  sleep 0.1
done
echo "$out"
has -E "r.disk.sock \(DISCONNECTED: .*; last try [0-9]+ s ago: .*r.disk.sock.*(No such file|not found|cannot connect)" <<<"$out" ||
  fail "status does not say how the reconnects end: $out"
out=$(bm list m0) || true
has -E "Last try [0-9]+ s ago: " <<<"$out" || fail "list does not say how the reconnects end: $out"
out=$(bm status --json m0) || true
# (before, --json left a DISCONNECTED component out altogether)
has -E '"path": "[^"]*r.disk.sock", "state": "DISCONNECTED", .*"reason": ".*; last try' <<<"$out" ||
  fail "status --json: $out"
filedisk r "$T/r.img"
wait_complete m0
out=$(bm status m0) || true
has "last try" <<<"$out" && fail "the last try outlived the reconnect: $out"
stop m0
