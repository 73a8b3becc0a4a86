# kill -9 while fio writes at random over 8 MiB of a 128 MiB mirror: the
# next start copies only the dirty regions (far less than the mirror),
# writes acknowledged and flushed before the kill read back, and the
# copies are identical after stop.
. "$(dirname "$0")/lib.sh"
need qemu-io
need fio
fio --enghelp 2>/dev/null | has -w nbd || skip "fio has no nbd engine"
mkimg 129 a b
bm label -n -r 1M m0 "$T/a" "$T/b"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x5a 100M 1M' -c flush >/dev/null
fio --name=w --ioengine=nbd --uri="$u" --rw=randwrite --bs=4k --iodepth=16 \
  --offset=40M --size=8M --time_based --runtime=30 >"$T/fio.out" 2>&1 &
fiopid=$!
# the writes have begun: regions in 40..47 are marked
for _ in $(seq 1 200); do
  out=$(bm list m0) || true
  grep -qE "regions, ([3-9]|[1-9][0-9]) dirty" <<<"$out" && break
  sleep 0.05
done
grep -qE "regions, ([3-9]|[1-9][0-9]) dirty" <<<"$out" || fail "fio's writes not marked: $(grep Bitmap <<<"$out")"
kill -9 "$(server_pid m0)"; wait "$(server_pid m0)" 2>/dev/null || true
wait $fiopid 2>/dev/null || true
serve m0
grep -q "not stopped cleanly" "$T/m0.log" || fail "crash not detected"
wait_complete m0
line=$(grep "synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"dirty regions only"* ]] || fail "not a dirty-region copy: $line"
copied=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
# regions 40..47 and 100: 9 MiB at most of 128
[ "$copied" -le $((9 * MIB)) ] || fail "copied $copied bytes"
qemu-io -f raw "$u" -c 'read -P 0x5a 100M 1M' | has "read 1048576" ||
  fail "a flushed write was lost"
stop m0
same_data "$T/a" "$T/b"
