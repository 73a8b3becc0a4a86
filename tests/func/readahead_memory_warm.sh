# The read-ahead's chunk memory is touched before the first stream (the
# event thread's tick, up to the default cap), so that a fresh server's
# first stream faults in nothing: on a virtual machine whose free memory
# goes back to the host a page's first touch costs ~15 us, and a fresh
# server's first stream from two 400 MiB/s disks read at 0.8-0.9x one
# disk.  Asserted on the server's RSS before any client came, and on the
# read-ahead's own count of bytes touched fresh (BM_RA_DEBUG) after a
# stream long enough for the chunk size to climb.
. "$(dirname "$0")/lib.sh"
need fio
export BM_RA_DEBUG=1
disk d0 96M --filter=rate rate=400M burstiness=0.05   # 50 MiB/s each
disk d1 96M --filter=rate rate=400M burstiness=0.05
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
bm configure -b stream m0
pid=$(server_pid m0)
rss_mib() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$pid/status"; }
rss=0
for _ in $(seq 1 50); do
  rss=$(rss_mib); [ "$rss" -ge 64 ] && break; sleep 0.1
done
echo "server RSS before any read: $rss MiB"
[ "$rss" -ge 64 ] || fail "the chunk memory was not warmed: server RSS $rss MiB (want >= 64)"
fio --ioengine=nbd --uri="$(uri m0)" --name=dd --rw=read --bs=128k \
  --iodepth=1 --size=80M >"$T/fio.log" 2>&1 || { cat "$T/fio.log"; fail "fio failed"; }
stop m0
line=$(ra_line m0 'chunk buffers:')
warmed=$(ra_count "$line" "MiB warmed before use")
fresh=$(ra_count "$line" "MiB touched fresh")
served=$(ra_count "$(ra_line m0 '[0-9]* reads served')" "reads served")
echo "warmed $warmed MiB, touched fresh $fresh MiB, $served of 640 reads from the read-ahead"
[ "$warmed" = 64.0 ] || fail "warmed $warmed MiB before use (want 64.0)"
[ "$fresh" = 0.0 ] || fail "the first stream touched $fresh MiB of fresh chunk memory (want 0.0)"
[ "${served:-0}" -ge 600 ] || fail "only $served of 640 reads came from the read-ahead"
