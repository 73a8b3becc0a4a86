# NBD components that take at most 1 MiB per request (their server
# advertises that maximum block size and answers EINVAL past it) serve a
# mirror whose clients send up to 32 MiB per request, and whose read-ahead
# reads chunks of 2 MiB and more: the NBD backend sends longer reads and
# writes in pieces.  Before, a 4 MiB write failed out the first component
# and failed the client's write ("Invalid argument").
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdcopy
need fio
need nbdsh
for d in d0 d1; do
  disk $d 96M --filter=blocksize-policy blocksize-maximum=1M blocksize-error-policy=error
done
# the disks really refuse more than 1 MiB (else this test shows nothing)
# (libnbd's strict mode off: it would refuse the request itself)
out=$(nbdsh -u "$(disk_uri d0)" -c 'h.set_strict_mode(0)' -c 'h.pread(2 * 1048576, 0)' 2>&1) &&
  fail "a 2 MiB read of d0 itself did not fail"
grep -q "Invalid argument" <<<"$out" || fail "a 2 MiB read of d0 failed otherwise: $out"

bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
bm configure -b stream m0
head -c $((64 * MIB)) /dev/urandom >"$T/pattern"
# 32 MiB requests (the most our clients may send), then 4 MiB with FUA
nbdcopy --request-size=$((32 * MIB)) "$T/pattern" "$(uri m0)" || fail "writing 32 MiB requests failed"
out=$(qemu-io -f raw "$(uri m0)" -c "write -f -P 0x5a $((60 * MIB)) 4M" -c "read -P 0x5a $((60 * MIB)) 4M" 2>&1) ||
  fail "a 4 MiB FUA write and its read failed: $out"
grep -q "Pattern verification failed\|failed" <<<"$out" && fail "qemu-io: $out"
printf '\x5a%.0s' $(seq 1 $((4 * MIB))) | dd of="$T/pattern" bs=1M seek=60 conv=notrunc status=none
# a QD1 stream: its read-ahead chunks (2 MiB and more) are read in pieces
fio --ioengine=nbd --uri="$(uri m0)" --name=s --rw=read --bs=128k --iodepth=1 --size=64M \
  >"$T/fio.log" 2>&1 || { cat "$T/fio.log"; fail "the stream read failed"; }
nbdcopy --request-size=$((32 * MIB)) "$(uri m0)" "$T/out" || fail "reading 32 MiB requests failed"
cmp -n $((64 * MIB)) "$T/pattern" "$T/out" || fail "the mirror read back other data than written"
st=$(bm status m0) || fail "status exits non-zero: $st"
echo "$st"
[ "$(grep -c '(ACTIVE)' <<<"$st")" = 2 ] || fail "a component left service: $st"
errs=$(bm stat --prometheus m0 | grep '_errors_total{' | awk '{s += $NF} END {print s + 0}')
[ "$errs" = 0 ] || fail "the components counted $errs errors"
# each component holds the data (read through its own 1 MiB limit)
for d in d0 d1; do
  nbdcopy --request-size=$MIB "$(disk_uri $d)" "$T/$d.img" || fail "reading $d failed"
  cmp -n $((64 * MIB)) "$T/pattern" "$T/$d.img" || fail "$d holds other data than written"
done
stop m0
echo ok
