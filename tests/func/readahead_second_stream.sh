# A dd run again from the start right after the first one ended gets the
# read-ahead at once: the first run's chunks (up to the memory cap) no
# longer hold the memory until that stream has been idle for a second.
# Before, the second run read at the speed of one component.  Asserted on
# the read-ahead's own count of reads it served (BM_RA_DEBUG), not on
# throughput: each run is ~0.5 s, inside the old one-second hold.
. "$(dirname "$0")/lib.sh"
need fio
export BM_RA_DEBUG=1
disk d0 96M --filter=rate rate=400M burstiness=0.05   # 50 MiB/s each
disk d1 96M --filter=rate rate=400M burstiness=0.05
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0 --readahead 16M
bm configure -b stream m0
for run in 1 2; do
  # the first 48 MiB of 96: the run ends with its read-ahead window full
  fio --ioengine=nbd --uri="$(uri m0)" --name=dd --rw=read --bs=128k \
    --iodepth=1 --size=48M >"$T/fio$run.log" 2>&1 || fail "run $run failed"
done
stop m0
served=$(ra_count "$(ra_line m0 '[0-9]* reads served')" "reads served")
echo "reads served by the read-ahead: $served of 768"
[ -n "$served" ] || fail "no count of reads served in the summary"
# each run: 384 reads, the first two of a stream are direct
[ "$served" -ge 700 ] || fail "only $served of 768 reads came from the read-ahead"
