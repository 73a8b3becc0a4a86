# configure --sync-min/--sync-max: wrong values are refused (usage, exit
# 2), a stopped mirror is refused (exit 1), a floor above the ceiling is
# refused by the server; a low ceiling slows the copy (16 MiB at 2 MiB/s
# takes several seconds, where the copy alone takes well under one), and
# while it runs status, list, stat, status --json and the progress command
# show percent, rate and time left.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 64 a
expect_usage "not a rate" bm configure --sync-max 10X m0
expect_usage "not a rate" bm configure --sync-min 0 m0
expect_usage "not a rate" bm configure --sync-min 1k m0
expect_usage "not a rate" bm configure --sync-max 100G m0
expect_usage "needs a value" bm configure m0 --sync-min
expect_usage "sync-min is above" bm configure --sync-min 8M --sync-max 2M m0
head -c $((16 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
cp "$T/a" "$T/r.img"
start_r() {
  rm -f "$T/r.sock"
  nbdkit -U "$T/r.sock" -P "$T/r.pid" file "$T/r.img" >>"$T/r.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/r.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/r.pid")")
}
start_r
bm label -n m0 "$T/a" "nbd+unix:///?socket=$T/r.sock"
expect_error "not running" bm configure --sync-max 2M m0
serve m0
expect_error "above" bm configure --sync-max 512K m0   # under the 1M floor
bm configure --sync-max 2M m0
expect_error "above" bm configure --sync-min 4M m0
bm configure --sync-min 1M/s m0
# r goes away and misses a write: when it comes back it is copied in full
# (the first write marks the labels dirty while r is there)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x70 0 64k' >/dev/null || fail "write failed"
kill -9 "$(cat "$T/r.pid")"; rm -f "$T/r.pid"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x71 0 64k' >/dev/null || fail "write failed"
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q "DISCONNECTED" <<<"$out" && break
  sleep 0.05
done
start_r
for _ in $(seq 1 400); do
  out=$(bm status m0) || true
  grep -q "SYNCHRONIZING" <<<"$out" && break
  sleep 0.05
done
grep -q "SYNCHRONIZING" <<<"$out" || fail "r is not copied again: $out"
t0=$(date +%s.%N)
# progress while it runs (the rate is known after a second)
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -qE "SYNCHRONIZING, [0-9]+%, [0-9.]+ MiB/s, [0-9hms]+ left" <<<"$out" && break
  sleep 0.05
done
grep -qE "SYNCHRONIZING, [0-9]+%, [0-9.]+ MiB/s, [0-9hms]+ left" <<<"$out" ||
  fail "status shows no rate or time left: $out"
p=$(bm list m0) || true
grep -qE "Progress: [0-9]+%, [0-9.]+ MiB/s" <<<"$p" || fail "list shows no progress: $p"
j=$(bm status --json m0) || true
grep -qE '"sync_mib_s": [0-9.]+, "sync_eta_s": [0-9]+' <<<"$j" ||
  fail "status --json has no rate: $j"
s=$(bm stat -b m0) || true
grep -qE "^sync: .*r.sock [0-9.]+% [0-9.]+ MiB/s" <<<"$s" || fail "stat shows no progress: $s"
$PY - "$T/state/m0.ctl" <<'PY' || fail "progress reply"
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"progress\n"); r = b""
while True:
    d = s.recv(65536)
    if not d: break
    r += d
lines = r.decode().split("\n")
assert lines[0] == "ok", r
f = lines[1].split(" ")
assert f[0] == "sync" and int(f[2]) <= int(f[3]) and int(f[4]) > 0 and int(f[5]) >= 0, r
print("progress:", lines[1])
PY
wait_complete m0
t1=$(date +%s.%N)
secs=$(echo "$t1 - $t0" | bc)
echo "16 MiB at a 2 MiB/s ceiling took $secs s"
# 8 MiB may be in flight at the start; the rest is paced: >= 4 s
[ "$(echo "$secs >= 4" | bc)" = 1 ] || fail "the ceiling did not slow the copy ($secs s)"
bm configure --sync-max 0 m0
stop m0
cmp -n $((16 * MIB)) "$T/a" "$T/r.img" || fail "copies differ"
