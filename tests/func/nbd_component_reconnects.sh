# Scenario 3: an NBD component whose server dies is DISCONNECTED, the
# client's writes go on without an error, and when its server is back the
# component is reconnected and copied again: the mirror is COMPLETE with
# identical copies, without a restart.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a r.img
start_r() {
  rm -f "$T/r.sock"
  nbdkit -U "$T/r.sock" -P "$T/r.pid" file "$T/r.img" >>"$T/r.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/r.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/r.pid")")
}
start_r
ruri="nbd+unix:///?socket=$T/r.sock"
bm label -n m0 "$T/a" "$ruri"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x31 0 1M' >/dev/null
kill -9 "$(cat "$T/r.pid")"; rm -f "$T/r.pid"
qemu-io -f raw "$u" -c 'write -P 0x32 1M 1M' -c 'read -P 0x31 0 1M' >"$T/qio" 2>&1 ||
  { cat "$T/qio"; fail "client I/O failed after a component died"; }
grep -qiE 'error|fail' "$T/qio" && { cat "$T/qio"; fail "client saw an error"; }
for _ in $(seq 1 50); do
  out=$(bm status m0) || true
  grep -q DISCONNECTED <<<"$out" && break
  sleep 0.1
done
grep -q "r.sock (DISCONNECTED" <<<"$out" || fail "not DISCONNECTED: $out"
qemu-io -f raw "$u" -c 'write -P 0x33 2M 1M' >/dev/null || fail "write while away failed"
start_r
wait_complete m0
grep -q "ComponentBack .*r.sock: " "$T/m0.log" || fail "no reconnect in the log"
stop m0
cmp -n $((31 * MIB)) "$T/a" "$T/r.img" || fail "copies differ after the reconnect"
