# Request buffers come from a pool (lib/bufpool.c) and are reused: data
# stays right with requests of every size in flight from several
# connections (fio verifies what it wrote, sizes 1 KiB to 300 KiB, so
# buffers of different size classes are reused for one another), and the
# server's memory does not grow from one round to the next (the pool keeps
# at most 16 MiB idle; what is in use is bounded by the bytes in flight).
. "$(dirname "$0")/lib.sh"
need fio
fio --enghelp 2>/dev/null | has -w nbd || skip "fio has no nbd engine"
mkimg 72 a b
bm label -n m0 "$T/a" "$T/b"
# (the read-ahead's chunk memory, which fio's sequential verify reads
# use, is kept resident while idle and counts in RSS: a cap of 8 MiB
# keeps it well inside the growth allowed below; it is not the pool's)
serve m0 --readahead 8M
pid=$(server_pid m0)
rss_mib() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$pid/status"; }
round() {
  fio --name=p --ioengine=nbd --uri="$(uri m0)" --rw=randrw --bsrange=1k-300k \
      --iodepth=16 --numjobs=3 --size=20M --offset_increment=20M \
      --verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting \
      --randrepeat=0 >"$T/fio.out" 2>&1 || { cat "$T/fio.out"; fail "fio failed (round $1)"; }
  grep -q "err= 0" "$T/fio.out" || { cat "$T/fio.out"; fail "fio reported errors (round $1)"; }
}
round 1
first=$(rss_mib)
for n in 2 3 4; do round $n; done
last=$(rss_mib)
echo "server RSS after round 1: $first MiB, after round 4: $last MiB"
# Under AddressSanitizer every mmap of a large buffer at a new address
# touches new shadow memory that munmap never gives back, so RSS there
# measures ASan, not the pool: the growth check is the plain build's.
if [ "${BUILD:-build}" != build-san ]; then
  [ "$last" -le $((first + 24)) ] || fail "server RSS grew from $first to $last MiB over 3 more rounds"
fi
# the bound itself: the pool's idle memory plus one connection budget
[ "$last" -lt 160 ] || fail "server RSS $last MiB after the rounds (want < 160)"
stop m0
same_data "$T/a" "$T/b"
