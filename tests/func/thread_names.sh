# Every thread of a serving process says what it is (top -H, perf,
# gdb, /proc/PID/task/*/comm): the per-thread figures of a profile are
# read by these names.  Only the main thread keeps the program's name.
. "$(dirname "$0")/lib.sh"
need nbdsh
mkimg 64 a
disk d1 64M
bm label -n m0 "$T/a" "$(disk_uri d1)"
serve m0
pid=$(server_pid m0)
# a client that stays connected while the threads are read
PATH=/usr/bin:$PATH /usr/bin/nbdsh -u "$(uri m0)" -c 'import time; time.sleep(30)' &
client=$!
for _ in $(seq 1 100); do
  grep -qx bm-client-rx /proc/"$pid"/task/*/comm 2>/dev/null && break
  sleep 0.05
done
names=$(cat /proc/"$pid"/task/*/comm | sort)
echo "threads:"; echo "$names" | uniq -c
for want in bm-events bm-accept bm-control bm-lease bm-sync bm-recover \
            bm-nbd-recv bm-client-rx; do
  echo "$names" | has -x "$want" || fail "no thread named $want"
done
# the file component's completions: io_uring's reaper, or the thread pool
echo "$names" | has -xE 'bm-file-reap|bm-file-io' || fail "no file component thread"
# (iou-wrk-N, iou-sqp-N: the kernel's io_uring workers, not ours)
unnamed=$(echo "$names" | grep -cvxE 'bm-.*|iou-.*' || true)
[ "$unnamed" -eq 1 ] || fail "$unnamed threads without a bm- name (only the main thread should have none)"
kill "$client" 2>/dev/null || true
wait "$client" 2>/dev/null || true
stop m0
# without io_uring the file component's requests run on a thread pool
BLKMIRROR_NO_IO_URING=1 serve m0
names=$(cat /proc/"$(server_pid m0)"/task/*/comm | sort)
echo "$names" | has -x bm-file-io || fail "no thread named bm-file-io without io_uring"
echo "$names" | has -x bm-file-reap && fail "a reaper without io_uring"
stop m0
echo "ok: every thread but the main one is named"
