# A chunk cut short (a stream's first, which ends at the next 512 KiB
# boundary, or the device's last) takes mostly the component's latency per
# request, not its transfer: 256 KiB from a 400 MiB/s disk with 2 ms of
# latency per request measures ~100 MB/s.  Taken as a component's first
# measured speed, it once sent a fresh stream's next 24 MiB to the other
# component while this one idled (readahead.c learn).  Each component's
# speed is now first measured on a chunk of its full size: asserted on
# BM_RA_DEBUG's "speed first measured" lines, for streams that start at
# offset 0 and at an odd offset (the first chunk is short in both), not on
# throughput.
. "$(dirname "$0")/lib.sh"
need nbdkit
need nbdcopy
need fio
export BM_RA_DEBUG=1
MIB=1048576

# full_first_measures WHEN FROM: each of the 2 components' speed was
# first measured, in the server's log from line FROM on, on a chunk of at
# least 2 MiB
full_first_measures() {
  local firsts
  firsts=$(tail -n +"$2" "$T/m0.log" |
    sed -n 's/^ra: comp \([0-9]*\) speed first measured on a \([0-9]*\)-byte chunk.*/\1 \2/p')
  echo "first measures $1 (component, chunk bytes):" $firsts
  [ "$(echo "$firsts" | grep -c .)" -eq 2 ] ||
    { cat "$T/m0.log"; fail "expected one first measure for each of the 2 components $1"; }
  echo "$firsts" | while read -r comp len; do
    [ "$len" -ge $((2 * MIB)) ] ||
      fail "component $comp's speed was first measured on a $len-byte chunk $1 (shorter than its 2 MiB chunks)"
  done || exit 1
}

stream_mirror m0 e0 e1 size=96M rate=400 fill=5
qd1_stream m0
full_first_measures "from offset 0" 1
# the same after the components come back on new connections (their
# measures start again), from a stream at an odd offset
stop m0
serve m0
bm configure -b stream m0
mark=$(($(wc -l <"$T/m0.log") + 1))
fio --ioengine=nbd --name=odd --uri="$(uri m0)" --rw=read --bs=128k --iodepth=1 \
  --offset=$((3 * MIB + 65536)) --size=$((64 * MIB)) >/dev/null || fail "fio failed"
stop m0
full_first_measures "after a restart, from an odd offset" "$mark"
echo "ok: no component's speed is first measured on a short chunk"
