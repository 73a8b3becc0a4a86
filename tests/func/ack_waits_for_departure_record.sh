# A write that reaches only the components left after another one went
# away is acknowledged only once their labels record the departure (the
# genid bump).  Before, such a write was acknowledged at once while that
# label write was still on its way; a crash then left every label at the
# old genid, and the next start could take the component that went away
# as the source and copy its old data over the acknowledged write (found
# by a crash test: writes lost).  Here a's label writes are held (hangdisk
# at the label's offset) while b dies: a write issued meanwhile must not
# be acknowledged; once a's label is written it is, and later writes are
# acknowledged at once again.
. "$(dirname "$0")/lib.sh"
need qemu-io
label_off=$(( 64 * MIB - 4096 ))
hangdisk a 64 "$label_off"
truncate -s 64M "$T/b.img"
filedisk b "$T/b.img"
bm label -n m0 "$(disk_uri b)" "$(disk_uri a)" >/dev/null
serve m0 --io-timeout 30
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 0 64k' >/dev/null || fail "first write"
hang a
disk_kill b
# this write finds b gone: b is dropped, and a's label write (the record)
# waits
qemu-io -f raw "$u" -c 'write -P 0x22 1M 64k' >"$T/w1.out" 2>&1 &
w1=$!
wait_status m0 "b.disk.sock (DISCONNECTED" 10
t0=$(date +%s%N)
rc=0; timeout 3 qemu-io -f raw "$u" -c 'write -P 0x33 2M 64k' >"$T/w2.out" 2>&1 || rc=$?
[ $rc -eq 124 ] || fail "a write was answered (exit $rc) while a's label did not yet record b's departure: $(cat "$T/w2.out")"
answer a
wait $w1 || fail "the write that found b gone failed: $(cat "$T/w1.out")"
t1=$(date +%s%N)
qemu-io -f raw "$u" -c 'write -P 0x44 3M 64k' >/dev/null || fail "a write after the record failed"
[ $(( ($(date +%s%N) - t1) / 1000000 )) -lt 2000 ] || fail "a write after the record took more than 2 s"
qemu-io -f raw "$u" -c 'read -P 0x22 1M 64k' -c 'read -P 0x44 3M 64k' >"$T/r.out" 2>&1 ||
  fail "reads: $(cat "$T/r.out")"
has -q "Pattern verification failed" "$T/r.out" && fail "data: $(cat "$T/r.out")"
bm dump "$(disk_uri a)" >"$T/a.dump" 2>&1 || true
stop m0
echo "waited $(( (t1 - t0) / 1000000 )) ms for the record"
