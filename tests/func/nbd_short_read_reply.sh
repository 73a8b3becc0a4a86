# An NBD component whose server answers a read with less data than asked
# (one chunk over half the range, flagged as the last; or that chunk twice,
# so that the bytes add up) is not believed:
# that read fails (the component's read error: another copy serves it),
# and no client read ever gets the unwritten half of a buffer.  Before,
# libnbd's completion callback reported success for such a reply, and
# read-ahead chunks served their stale second halves (zeros, or another
# offset's data) to the client.
. "$(dirname "$0")/lib.sh"
need nbdcopy
need python3
for mode in half twice; do
  m=m_$mode
  disk "g_$mode" 64M
  python3 "$(dirname "$0")/../tools/nbd_short_reads.py" "$T/b_$mode.disk.sock" $((64 * MIB)) \
    "$T/short_$mode" "$mode" 2>>"$T/bad.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -S "$T/b_$mode.disk.sock" ] && break; sleep 0.05; done
  [ -S "$T/b_$mode.disk.sock" ] || fail "the short-read server did not start"
  bm label -n $m "$(disk_uri "g_$mode")" "$(disk_uri "b_$mode")"
  serve $m --readahead 16M
  bm configure -b stream $m
  head -c $((48 * MIB)) /dev/urandom >"$T/pattern"
  nbdcopy "$T/pattern" "$(uri $m)" || fail "$mode: writing the pattern failed"
  touch "$T/short_$mode"   # from now on, reads of 512 KiB and more come back short
  nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri $m)" "$T/out" ||
    fail "$mode: reading back failed"
  cmp -n $((48 * MIB)) "$T/pattern" "$T/out" ||
    fail "$mode: a client read got data that was never written there"
  # the short replies counted as the bad component's errors
  errs=$(bm stat --prometheus $m | grep '_errors_total{' | grep "b_$mode.disk.sock" | awk '{print $NF}')
  echo "$mode: errors counted on the short-reply component: $errs"
  [ -n "$errs" ] && [ "$errs" -gt 0 ] || fail "$mode: the short replies were not counted as errors ('$errs')"
  stop $m
done
