# A component that dies while it is being copied and comes back: the copy
# starts again from the beginning on the new connection (a copy that was
# running on the old one must not carry on from where it was: the part
# before it would miss the writes made while the component was away), and
# the copies end identical.  The target is slow (300 ms a write; the copy keeps 8 in flight), so the
# copy is in progress when it dies.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a r.img
start_r() {
  rm -f "$T/r.sock"
  nbdkit -U "$T/r.sock" -P "$T/r.pid" --filter=delay file "$T/r.img" wdelay=300ms \
    >>"$T/r.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/r.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/r.pid")")
}
qemu-io -f raw "$T/a" -c 'write -P 0x61 0 60M' >/dev/null   # the source's data
start_r
bm label m0 "$T/a" "nbd+unix:///?socket=$T/r.sock"           # r is copied from a
serve m0
u=$(uri m0)
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -qE "SYNCHRONIZING, ([1-9]|[1-4][0-9])%" <<<"$out" && break
  sleep 0.05
done
grep -q "SYNCHRONIZING" <<<"$out" || fail "not synchronizing: $out"
kill -9 "$(cat "$T/r.pid")"; rm -f "$T/r.pid"
# written while r is away, at the start (already copied before it died)
qemu-io -f raw "$u" -c 'write -P 0x62 0 1M' -c 'write -P 0x63 30M 1M' >/dev/null ||
  fail "write while r is away failed"
start_r
wait_complete m0
stop m0
cmp -n $((63 * MIB)) "$T/a" "$T/r.img" || fail "copies differ after a reconnect during sync"
qemu-io -f raw "$T/r.img" -c 'read -P 0x62 0 1M' -c 'read -P 0x63 30M 1M' >/dev/null ||
  fail "r misses writes made while it was away"
