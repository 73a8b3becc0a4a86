# FUA, FLUSH, TRIM and WRITE_ZEROES reach every component, as what they are:
# each component is an nbdkit disk behind the log filter, and its log must
# show the client's requests at the client's offsets.
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d0 32M --filter=log logfile="$T/d0.reqlog"
disk d1 32M --filter=log logfile="$T/d1.reqlog"
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
qemu-io -t writeback -f raw "$(uri m0)" -c 'write -P 0x5a 0x300000 64k' -c 'write -f -P 0x5b 0x310000 4k' \
  -c flush -c 'discard 0x100000 0x10000' -c 'write -z 0x200000 0x10000' >/dev/null
for d in d0 d1; do
  log=$T/$d.reqlog
  grep -q 'Write id=[0-9]* offset=0x300000 count=0x10000 fua=0' "$log" || fail "$d: plain write missing"
  grep -q 'Write id=[0-9]* offset=0x310000 count=0x1000 fua=1' "$log" || fail "$d: FUA write missing or not FUA"
  # a flush after the FUA write
  awk '/offset=0x310000 count=0x1000 fua=1/ {w=1} w && /Flush id=/ {f=1} END {exit !f}' "$log" ||
    fail "$d: no flush after the writes"
  # TRIM goes to NBD components as a zeroing that may unmap (copies stay equal)
  grep -q "Zero id=[0-9]* offset=0x100000 count=0x10000 trim=1" "$log" || fail "$d: trim missing"
  grep -q 'Zero id=[0-9]* offset=0x200000 count=0x10000' "$log" || fail "$d: write-zeroes missing"
done
stop m0
