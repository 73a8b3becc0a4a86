# Client writes, FLUSH, TRIM and WRITE_ZEROES racing a resync (pipelined,
# with source holes trimmed on the target): every acknowledged write reads
# back from every component afterwards, and the copies are identical.
# acked_writes.py writes 4 KiB blocks all over; a second client trims,
# zeroes, writes and flushes other blocks (the ones acked_writes cannot
# pick: same seed, same draw) and records what each must hold.
. "$(dirname "$0")/lib.sh"
need nbdkit
mkimg 96 a
head -c $((48 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
# the target: old data everywhere, behind a 20 MiB/s limit so the copy
# lasts while the clients run
head -c $((96 * MIB)) /dev/zero | tr '\0' '\063' >"$T/t.img"
nbdkit -U "$T/t.sock" -P "$T/t.pid" --filter=rate file "$T/t.img" \
  rate=160M burstiness=0.05 >>"$T/t.log" 2>&1
for _ in $(seq 1 100); do [ -s "$T/t.pid" ] && break; sleep 0.05; done
PIDS+=("$(cat "$T/t.pid")")
bm label -f m0 "$T/a" "nbd+unix:///?socket=$T/t.sock"
serve m0
u=$(uri m0)
cat >"$T/racer.py" <<'PY'
import json, random, sys, nbd
BS = 4096
uri, state, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
h = nbd.NBD(); h.connect_uri(uri)
slots = h.get_size() // BS
taken = set(random.Random(seed).sample(range(slots), count))  # acked_writes.py's draw
rnd = random.Random(seed + 1)
free = [s for s in range(0, slots - 16, 16) if not any(s + k in taken for k in range(16))]
want = {}
for i in range(600):
    s = rnd.choice(free); off = s * BS; n = 16 * BS
    op = rnd.randrange(4)
    if op == 0:
        h.pwrite(bytes([i % 251 + 1]) * n, off); want[off] = i % 251 + 1
    elif op == 1:
        h.trim(n, off); want[off] = 0
    elif op == 2:
        h.zero(n, off); want[off] = 0
    else:
        h.flush()
h.flush()
json.dump(want, open(state, "w"))
PY
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q "SYNCHRONIZING" <<<"$out" && break
  sleep 0.05
done
grep -q "SYNCHRONIZING" <<<"$out" || fail "not synchronizing: $out"
$PY "$T/racer.py" "$u" "$T/racer.json" 3000 7 &
racer=$!
$PY "$(dirname "$0")/../tools/acked_writes.py" write "$u" "$T/acked.json" 3000 16 7 |
  tee "$T/acked.out"
wait $racer || fail "the trim/zero/flush client failed"
out=$(bm status m0) || true
grep -q "SYNCHRONIZING" <<<"$out" || echo "note: the copy ended before the clients did"
wait_complete m0
stop m0
n=$(data_size "$T/a")
same_data "$T/a" "$T/t.img" "$n"
# Each component alone, served as a plain export, holds every acked write.
check_alone() {
  rm -f "$T/v.sock"
  nbdkit -U "$T/v.sock" -P "$T/v.pid" file "$1" >>"$T/v.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/v.pid" ] && break; sleep 0.05; done
  $PY "$(dirname "$0")/../tools/acked_writes.py" verify "nbd+unix:///?socket=$T/v.sock" \
    "$T/acked.json" || fail "$1 misses an acknowledged write"
  $PY - "nbd+unix:///?socket=$T/v.sock" "$T/racer.json" <<'PY' || fail "$1 misses a trim, zero or write"
import json, sys, nbd
h = nbd.NBD(); h.connect_uri(sys.argv[1])
for off, v in json.load(open(sys.argv[2])).items():
    got = h.pread(16 * 4096, int(off))
    if got != bytes([v]) * len(got):
        print("block at %s does not hold %d" % (off, v)); sys.exit(1)
print("every trim, zero and write of the second client reads back")
PY
  kill "$(cat "$T/v.pid")"; rm -f "$T/v.pid"
  for _ in $(seq 1 100); do [ -S "$T/v.sock" ] || break; sleep 0.05; done
}
check_alone "$T/a"
kill "$(cat "$T/t.pid")"
check_alone "$T/t.img"
