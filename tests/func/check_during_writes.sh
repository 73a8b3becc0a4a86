# check while clients write hard (16 writes in flight, random offsets and
# sizes): every chunk is compared under the exclusive range hold, so no
# write in flight shows as a difference.  (Writes in flight together never
# overlap here: NBD gives overlapping writes in flight no order, so two of
# them may land in different orders on two components, and check rightly
# reports that.)  Several checks run
# while the writer is busy; each must exit 0; afterwards the copies are
# identical.  (Without the hold this test reports differences.)
. "$(dirname "$0")/lib.sh"
mkimg 65 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
# The writer counts its completed writes in $T/count and stops when
# $T/stop exists.
cat >"$T/writer.py" <<'PY'
import os, random, sys
import nbd
uri, count_file, stop_file = sys.argv[1:4]
h = nbd.NBD()
h.connect_uri(uri)
size = h.get_size()
rnd = random.Random(7)
data = os.urandom(1 << 20)
done, inflight = 0, {}
def free(off, n):
    return all(off + n <= o or o + m <= off for o, m in inflight.values())
while not os.path.exists(stop_file):
    while len(inflight) < 16:
        n = rnd.choice((4096, 16384, 65536, 262144))
        off = rnd.randrange(0, size - n, 512)
        if not free(off, n):
            continue
        s = rnd.randrange(0, len(data) - n)
        buf = nbd.Buffer.from_bytearray(bytearray(data[s:s + n]))
        inflight[h.aio_pwrite(buf, off)] = (off, n)
    h.poll(-1)
    for c in list(inflight):
        if h.aio_command_completed(c):
            del inflight[c]
            done += 1
    if done % 64 == 0:
        with open(count_file + ".tmp", "w") as f:
            f.write(str(done))
        os.replace(count_file + ".tmp", count_file)
while inflight:
    h.poll(-1)
    for c in list(inflight):
        if h.aio_command_completed(c):
            del inflight[c]
h.flush()
h.shutdown()
PY
$PY "$T/writer.py" "$(uri m0)" "$T/count" "$T/stop" >"$T/writer.out" 2>&1 &
writer=$!
PIDS+=("$writer")
for _ in $(seq 1 200); do [ -s "$T/count" ] && break; sleep 0.05; done
[ -s "$T/count" ] || { cat "$T/writer.out"; fail "the writer did not start"; }
overlapped=0
for i in $(seq 1 20); do
  before=$(cat "$T/count")
  rc=0; out=$(bm check m0 2>&1) || rc=$?
  after=$(cat "$T/count")
  [ $rc -eq 0 ] || fail "check $i during writes exited $rc: $out"
  grep -q "identical" <<<"$out" || fail "check $i said: $out"
  [ "$after" -gt "$before" ] && overlapped=$((overlapped + 1))
  echo "check $i: $((after - before)) writes completed during it"
  [ $overlapped -ge 3 ] && break
done
[ $overlapped -ge 3 ] || fail "only $overlapped checks ran while the writer wrote"
kill -0 "$writer" 2>/dev/null || { cat "$T/writer.out"; fail "the writer died"; }
touch "$T/stop"
wait "$writer" || { cat "$T/writer.out"; fail "the writer failed"; }
out=$(bm check m0) || fail "check after the writes exited $?: $out"
stop m0
same_data "$T/a" "$T/b"
