# A component file cut short (truncate) while the mirror is idle, and a
# client write comes before the health check's next look (a tick, 250 ms):
# the write marks the mirror DIRTY, whose label write lands at the end of
# every component.  On the cut file that write would grow it back to its
# old size with a hole that reads as zeros, and the component would look
# whole again; it must be refused instead (the file stays cut short, the
# component DISCONNECTED) and every read return the data.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a b
bm label -n -b round-robin m0 "$T/a" "$T/b"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x77 0 62M' >/dev/null
# idle: the labels are marked clean (the next write marks them DIRTY)
wait_status m0 "m0 *COMPLETE" 10
wait_clean m0
truncate -s 10M "$T/b"
qemu-io -f raw "$u" -c 'write -P 0x78 1M 4k' >/dev/null || fail "the write failed"
for off in 41 42 43 44 11 20; do
  qemu-io -f raw "$u" -c "read -P 0x77 ${off}M 1M" >"$T/read.out" 2>&1 ||
    fail "read at ${off}M failed: $(cat "$T/read.out")"
  has -q "Pattern verification failed" "$T/read.out" &&
    fail "read at ${off}M returned other data: $(cat "$T/read.out")"
done
# (said by the write refused, the health check, or the reconnect's look)
wait_status m0 "b (DISCONNECTED: .*\(shrank to\|came back smaller (\)10485760 bytes" 5
[ "$(stat -c %s "$T/b")" = $((10 * MIB)) ] ||
  fail "b was written past its new end: $(stat -c %s "$T/b") bytes: $(cat "$T/m0.log")"
stop m0
