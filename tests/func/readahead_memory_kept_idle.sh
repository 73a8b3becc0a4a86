# The read-ahead's chunk memory stays the server's own for 30 s without a
# stream before it is given to the kernel lazily (MADV_FREE), both the
# memory warmed before the first stream and what a stream used.  Why: on
# a VM whose hypervisor shadows page tables (this one) the first write to
# a lazily freed page costs ~8 us, so a server that gave its memory back
# after one idle second paid that on every stream after a pause (server
# CPU per GiB 1.15 against 0.61-0.68 on a QD1 stream from two 400 MiB/s
# disks).  Asserted on the kernel's count of the server's lazily freed
# memory (LazyFree in smaps_rollup): none 3 s after the warm and 3 s
# after a stream, most of the cap once 30 s have passed.
. "$(dirname "$0")/lib.sh"
need fio
need nbdcopy
mkimg 96 a b
bm label -n -b stream m0 "$T/a" "$T/b" >/dev/null
serve m0
head -c 64M /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)" || fail "nbdcopy could not write the mirror"
pid=$(server_pid m0)
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$pid/smaps_rollup"; }
rss=0
for _ in $(seq 1 50); do
  rss=$(( $(kib Rss) / 1024 )); [ "$rss" -ge 64 ] && break; sleep 0.1
done
[ "$rss" -ge 64 ] || fail "the chunk memory was not warmed: server RSS $rss MiB (want >= 64)"
sleep 3
lazy=$(( $(kib LazyFree) / 1024 ))
echo "3 s after the warm: RSS $(( $(kib Rss) / 1024 )) MiB, lazily freed $lazy MiB"
[ "$lazy" -eq 0 ] || fail "$lazy MiB of the warmed chunk memory was given back after 3 s idle (want 0 before 30 s)"
fio --ioengine=nbd --uri="$(uri m0)" --name=dd --rw=read --bs=128k \
  --iodepth=1 --size=64M >"$T/fio.log" 2>&1 || { cat "$T/fio.log"; fail "fio failed"; }
sleep 3
lazy=$(( $(kib LazyFree) / 1024 ))
echo "3 s after a stream: lazily freed $lazy MiB"
[ "$lazy" -eq 0 ] || fail "$lazy MiB of chunk memory was given back 3 s after a stream (want 0 before 30 s)"
for _ in $(seq 1 40); do
  lazy=$(( $(kib LazyFree) / 1024 )); [ "$lazy" -ge 32 ] && break; sleep 1
done
echo "30 s after: lazily freed $lazy MiB"
[ "$lazy" -ge 32 ] || fail "an idle server kept its chunk memory its own after 40 s: $lazy MiB lazily freed (want >= 32)"
# a QD1 stream after the lazy free (through the read-ahead: its chunks
# reuse those buffers, whether or not the kernel took pages back) reads
# what was written
nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents \
  "$(uri m0)" "$T/out" || fail "the stream read of the mirror failed"
cmp -n $((64 << 20)) "$T/out" "$T/data" \
  || fail "the mirror read differs from what was written, after the memory was freed lazily"
stop m0
