# A component file cut short (truncate) while served is gone, not a disk
# with bad blocks: idle, it is DISCONNECTED within a second with the
# reason; read, it is DISCONNECTED at the first read past its new end,
# which is served from the other copy, and it is never "repaired" (a
# repair written past the end would grow the file back with a hole that
# reads as zeros, and the component would look whole again).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a b c d
# idle: the health check sees the size
bm label -n m0 "$T/a" "$T/b"
serve m0
truncate -s 10M "$T/b"
wait_status m0 "b (DISCONNECTED: .*the file shrank to 10485760 bytes (it had 68157440)" 2
stop m0

# read: every other read goes to d (round-robin)
bm label -n -b round-robin m1 "$T/c" "$T/d"
serve m1
u=$(uri m1)
qemu-io -f raw "$u" -c 'write -P 0x77 0 62M' >/dev/null
truncate -s 10M "$T/d"
for off in 41 42 43 44 45 46 11 20 30 39 5; do
  qemu-io -f raw "$u" -c "read -P 0x77 ${off}M 1M" >"$T/read.out" 2>&1 ||
    fail "read at ${off}M failed: $(cat "$T/read.out")"
  has -q "Pattern verification failed" "$T/read.out" &&
    fail "read at ${off}M returned other data: $(cat "$T/read.out")"
done
st=$(bm status m1) || true
grep -q "d (DISCONNECTED" <<<"$st" || fail "d not disconnected: $st"
[ "$(stat -c %s "$T/d")" = $((10 * MIB)) ] ||
  fail "d was written past its new end: $(stat -c %s "$T/d") bytes"
has -q "ReadErrorRepaired" "$T/m1.log" && fail "d was repaired: $(cat "$T/m1.log")"
stop m1
echo ok
