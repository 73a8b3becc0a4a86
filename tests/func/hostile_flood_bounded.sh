# A client pipelines 100 reads of 32 MiB and never reads a reply
# (RELIABILITY 29): the server's memory stays bounded by its budgets of
# bytes in flight, no backend thread is held by the stuck replies (another
# client is served meanwhile, at once), and when the flooder leaves the
# server goes on serving and stops cleanly.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdinfo
mkimg 80 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
pid=$(server_pid m0)
rss_mib() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$pid/status"; }
qemu-io -f raw "$(uri m0)" -c 'write -P 0x6b 1M 1M' >/dev/null

"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 flood 100 $((32 * MIB)) >"$T/flood.out" 2>&1 &
flood=$!
PIDS+=("$flood")
for _ in $(seq 1 600); do
  grep -q "replies pending" "$T/flood.out" && break
  kill -0 "$flood" 2>/dev/null || { cat "$T/flood.out" >&2; fail "flooder ended early"; }
  sleep 0.1
done
grep -q "replies pending" "$T/flood.out" || fail "the server never answered the flooder"

# Another client, meanwhile: served, with the right data, within seconds.
timeout 10 qemu-io -f raw -r "$(uri m0)" -c 'read -P 0x6b 1M 1M' >"$T/read.out" 2>&1 ||
  { cat "$T/read.out" >&2; fail "a second client was not served while the flooder waits"; }
grep -q "read 1048576/1048576" "$T/read.out" || fail "second client: $(cat "$T/read.out")"
timeout 10 nbdinfo --size "$(uri m0)" | has -x $((79 * MIB)) || fail "nbdinfo not served"

# Memory: the flooder holds at most its budget (64 MiB) of read buffers.
max=0
for _ in $(seq 1 20); do
  r=$(rss_mib)
  [ "$r" -gt "$max" ] && max=$r
  sleep 0.1
done
echo "server RSS peak while flooded: $max MiB"
[ "$max" -lt 400 ] || fail "server RSS $max MiB with one flooding client (want < 400)"

kill "$flood"
wait "$flood" 2>/dev/null || true
timeout 10 qemu-io -f raw -r "$(uri m0)" -c 'read -P 0x6b 1M 1M' | has "read 1048576/1048576" ||
  fail "not served after the flooder left"
r=$(rss_mib)
echo "server RSS after: $r MiB"

# A flooder still connected does not keep the server from stopping.
"$TEST_TOOLS/nbd_hostile" "$T/m0.sock" m0 flood 100 $((32 * MIB)) >"$T/flood2.out" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 600); do
  grep -q "replies pending" "$T/flood2.out" && break
  sleep 0.1
done
start=$SECONDS
stop m0 -f
[ $((SECONDS - start)) -lt 20 ] || fail "stopping took $((SECONDS - start)) s with a flooder connected"
