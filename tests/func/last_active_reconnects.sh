# The last ACTIVE component is an NBD export whose server dies (the other
# deactivated): status says it is DISCONNECTED within a second, client
# I/O fails meanwhile, and when its server is back it is reconnected and
# ACTIVE again, with nothing to copy (it holds every acknowledged write:
# all failed while it was away); the other is then copied from it.
# Before: ACTIVE in status with a dead connection, every request EIO
# until the server was restarted, hundreds of LastComponentError lines.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
truncate -s 64M "$T/b.img"
filedisk b "$T/b.img"
bm label -n m0 "$T/a" "$(disk_uri b)"
serve m0 --io-timeout 2
u=$(uri m0)
bm deactivate m0 "$T/a" >/dev/null
qemu-io -f raw "$u" -c 'write -P 0x33 2M 1M' >/dev/null || fail "first write"
disk_kill b
wait_status m0 "b.disk.sock (DISCONNECTED: .*it was the last ACTIVE component: client I/O fails until it is back)" 3
out=$(qemu-io -f raw "$u" -c 'write -P 0x44 3M 1M' 2>&1) || true
grep -q "Input/output error" <<<"$out" || fail "a write with no ACTIVE component: $out"
filedisk b "$T/b.img"
wait_status m0 "b.disk.sock (ACTIVE)" 10
grep -q "ComponentBack .*b.disk.sock: it answers again with its label; ACTIVE again" "$T/m0.log" ||
  fail "log: $(cat "$T/m0.log")"
qemu-io -f raw "$u" -c 'read -P 0x33 2M 1M' -c 'write -P 0x55 4M 1M' >"$T/qio" 2>&1 ||
  fail "I/O after b came back: $(cat "$T/qio")"
has -q "Pattern verification failed" "$T/qio" && fail "data: $(cat "$T/qio")"
n=$(grep -c "LastComponentError" "$T/m0.log" || true)
[ "$n" -le 5 ] || fail "$n LastComponentError lines"
bm activate --wait m0 "$T/a" >/dev/null || fail "activate a"
stop m0
cmp -n $((62 * MIB)) "$T/a" "$T/b.img" || fail "copies differ"
echo ok
