# A read-ahead chunk is read as pieces (1 MiB from an 80 MiB/s disk: what
# it reads in 10 ms, at least 1 MiB), so that a client read is served once
# the pieces under it have landed instead of waiting for the whole chunk.
# Asserted on the components' own request counts (stat --prometheus): the
# build before sent each chunk (2 MiB and up) as one request.  And the
# data a stream reads through the mirror is the disks' data.
. "$(dirname "$0")/lib.sh"
need fio
need nbdcopy
MIB=$((1024 * 1024))
stream_mirror m0 e0 e1 size=256M rate=80 fill=5
fio --ioengine=nbd --uri="$(uri m0)" --rw=read --bs=128k --iodepth=1 --size=64M \
  --name=s >"$T/fio.log" 2>&1 || { cat "$T/fio.log"; fail "fio failed"; }
out=$(bm stat --prometheus m0)
sum() { sed -n "s/^$1{mirror=\"m0\",component=\"[^\"]*\"} //p" <<<"$out" | awk '{s += $1} END {print s + 0}'; }
reads=$(sum blkmirror_component_reads_total)
bytes=$(sum blkmirror_component_read_bytes_total)
echo "components: $reads reads, $bytes bytes"
[ "$bytes" -ge $((64 * MIB)) ] || fail "the components read $bytes bytes for a 64 MiB stream"
[ "$reads" -ge $((bytes / MIB)) ] ||
  fail "$reads reads for $bytes bytes: requests longer than 1 MiB (chunks not in pieces)"
# the data: a whole-disk copy through the mirror (several reads in flight,
# its own streams) against one disk read directly
nbdcopy "$(uri m0)" "$T/via-mirror" || fail "nbdcopy from the mirror failed"
nbdcopy "$(disk_uri e0)" "$T/direct" || fail "nbdcopy from e0 failed"
size=$(stat -c %s "$T/via-mirror")
[ "$size" -gt $((200 * MIB)) ] || fail "the mirror's copy has $size bytes"
cmp -n "$size" "$T/direct" "$T/via-mirror" ||
  fail "the mirror read other data than the disk holds"
stop m0
