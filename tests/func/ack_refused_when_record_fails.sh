# A write issued while a departure is being recorded, that completes after
# the record ended with the survivor's label write failing (it is the last
# ACTIVE one: writes are refused from then on), is not acknowledged: no
# label says the other left, so a crash would take that one as current
# without the write.  Before, it was (found by a review of the fix of
# ack_waits_for_departure_record).
. "$(dirname "$0")/lib.sh"
need qemu-io
command -v nbdkit >/dev/null || skip "nbdkit is not installed"
label_off=$(( 64 * MIB - 4096 )); slow_off=$(( 2 * MIB ))
truncate -s 64M "$T/a.img"; arm=$T/a.arm
nbdkit -U "$T/a.disk.sock" -P "$T/a.disk.pid" eval \
  get_size="echo $((64 * MIB))" can_write='exit 0' can_flush='exit 0' \
  can_multi_conn='exit 0' thread_model='echo parallel' flush=true \
  pread="dd if=$T/a.img skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
  pwrite="if [ -e $arm ] && [ \$4 = $label_off ]; then sleep 2; echo 'EIO refused' >&2; exit 1; fi; if [ -e $arm ] && [ \$4 = $slow_off ]; then sleep 4; fi; dd of=$T/a.img seek=\$4 conv=notrunc oflag=seek_bytes status=none" \
  >>"$T/a.disk.log" 2>&1 || fail "nbdkit a"
for _ in $(seq 1 100); do [ -s "$T/a.disk.pid" ] && break; sleep 0.05; done
PIDS+=("$(cat "$T/a.disk.pid")")
truncate -s 64M "$T/b.img"; filedisk b "$T/b.img"
bm label -n m0 "$(disk_uri a)" "$(disk_uri b)" >/dev/null
serve m0 --io-timeout 30
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 0 64k' >/dev/null || fail "first write"
touch "$arm"; disk_kill b
qemu-io -f raw "$u" -c 'write -P 0x22 1M 64k' >"$T/w1.out" 2>&1 &
w1=$!
wait_status m0 "b.disk.sock (DISCONNECTED" 10
rc=0; qemu-io -f raw "$u" -c 'write -P 0x33 2M 64k' >"$T/w2.out" 2>&1 || rc=$?
w1rc=0; wait $w1 || w1rc=$?
echo "W1 exit $w1rc; W2 exit $rc" >&2
bm status m0 >&2 || true; rm -f "$arm"

stop m0 || true
[ $rc -ne 0 ] || fail "W2 acknowledged though no label records b's departure"
