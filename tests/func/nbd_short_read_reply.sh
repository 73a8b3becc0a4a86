# An NBD component whose server answers a read with less data than asked
# (one chunk over half the range, flagged as the last) is not believed:
# that read fails (the component's read error: another copy serves it),
# and no client read ever gets the unwritten half of a buffer.  Before,
# libnbd's completion callback reported success for such a reply, and
# read-ahead chunks served their stale second halves (zeros, or another
# offset's data) to the client.
. "$(dirname "$0")/lib.sh"
need nbdcopy
need python3
disk d0 64M
python3 "$(dirname "$0")/../tools/nbd_short_reads.py" "$T/bad.disk.sock" $((64 * MIB)) \
  "$T/short" 2>>"$T/bad.log" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -S "$T/bad.disk.sock" ] && break; sleep 0.05; done
[ -S "$T/bad.disk.sock" ] || fail "the short-read server did not start"
bm label -n m0 "$(disk_uri d0)" "$(disk_uri bad)"
serve m0 --readahead 16M
bm configure -b stream m0
head -c $((48 * MIB)) /dev/urandom >"$T/pattern"
nbdcopy "$T/pattern" "$(uri m0)" || fail "writing the pattern failed"
touch "$T/short"   # from now on, reads of 512 KiB and more come back short
nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri m0)" "$T/out" ||
  fail "reading back failed"
cmp -n $((48 * MIB)) "$T/pattern" "$T/out" || fail "a client read got data that was never written there"
# the short replies counted as the bad component's errors
errs=$(bm stat --prometheus m0 | grep '_errors_total{' | grep 'bad.disk.sock' | awk '{print $NF}')
echo "errors counted on the short-reply component: $errs"
[ -n "$errs" ] && [ "$errs" -gt 0 ] || fail "the short replies were not counted as errors ('$errs')"
stop m0
