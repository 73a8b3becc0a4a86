# A sparse source onto targets full of old data: the old data is gone
# (the targets read zeros where the source has holes) and the targets are
# thin afterwards.  Files answer SEEK_DATA/SEEK_HOLE; NBD exports answer
# block status (base:allocation): an nbdkit memory disk as the source of a
# second mirror, an nbdkit file export as a target.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 64 a
# the source: 1 MiB of data at 10 MiB, and 4 KiB every 256 KiB from 30 to
# 40 MiB (small holes between: copied with the data, as zeros), holes
# elsewhere
qemu-io -f raw "$T/a" -c 'write -P 0x5a 10M 1M' >/dev/null
cmds=(); for k in $(seq 0 39); do cmds+=(-c "write -P 0x5b $((30 * MIB + k * 262144)) 4k"); done
qemu-io -f raw "$T/a" "${cmds[@]}" >/dev/null
# targets: old data everywhere (0x33), a plain file and an NBD file export
for f in old t2.img; do
  head -c $((64 * MIB)) /dev/zero | tr '\0' '\063' >"$T/$f"
done
nbdkit -U "$T/t2.sock" -P "$T/t2.pid" file "$T/t2.img" >>"$T/t2.log" 2>&1
for _ in $(seq 1 100); do [ -s "$T/t2.pid" ] && break; sleep 0.05; done
PIDS+=("$(cat "$T/t2.pid")")
bm label -f m0 "$T/a" "$T/old" "nbd+unix:///?socket=$T/t2.sock"
serve m0
wait_complete m0
stop m0
n=$(data_size "$T/a")
same_data "$T/a" "$T/old" "$n"
same_data "$T/a" "$T/t2.img" "$n"
qemu-io -f raw "$T/old" -c 'read -P 0 0 10M' -c 'read -P 0x5a 10M 1M' \
  -c 'read -P 0 11M 19M' -c 'read -P 0x5b 30M 4k' -c "read -P 0 $((30 * MIB + 4096)) 258048" \
  -c 'read -P 0 40M 23M' >/dev/null || fail "old data left on the target"
for f in old t2.img; do
  # 1 MiB + the 10 MiB of small fragments + metadata, of 64 MiB
  kib=$(du -k "$T/$f" | cut -f1)
  [ "$kib" -le 16384 ] || fail "$f still takes $kib KiB after the sync"
done

# An NBD source (nbdkit memory: holes answer with the zero flag) onto a
# file full of old data: the file's old data is punched out, not written.
disk src 64M
qemu-io -f raw "$(disk_uri src)" -c 'write -P 0x6b 20M 1M' >/dev/null
head -c $((64 * MIB)) /dev/zero | tr '\0' '\063' >"$T/old2"
bm label -f m1 "$(disk_uri src)" "$T/old2"
serve m1
wait_complete m1
stop m1
qemu-io -f raw "$T/old2" -c 'read -P 0 0 20M' -c 'read -P 0x6b 20M 1M' \
  -c 'read -P 0 21M 42M' >/dev/null || fail "old data left on the file target"
kib=$(du -k "$T/old2" | cut -f1)
[ "$kib" -le 4096 ] || fail "old2 takes $kib KiB: the NBD source's holes were written"
