# One QD1 stream under `stream` while one of two equal disks (40 MiB/s)
# slows to a quarter of its speed in the middle of it (another tenant, a
# disk retrying a sector): the read-ahead follows what the disks do now,
# and gives the slow one its share (1/5 of the chunks), not half (with
# half, the fast disk would wait for the slow one and read at 20 MiB/s);
# when the disk is back to its speed, the shares are even again.
# Checked from `blkmirror stat --json` (the bytes each component read in
# one second), not from timings.
. "$(dirname "$0")/lib.sh"
need nbdcopy
need jq
emudisk d0 size=1G rate=40 fill=3
emudisk d1 size=1G rate=40 fill=3 ratefile="$T/d1.rate"
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
bm configure -b stream m0
qd1_stream m0 &
reader=$!
PIDS+=("$reader")
sample() { bm stat m0 -c 1 -I 1s --json | jq -r '"\(.rows[0].r_kBps) \(.rows[1].r_kBps)"'; }
share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / (a + b) }'; }
sleep 1
read -r a b <<<"$(sample)"
echo "equal disks: $a $b kB/s (d0's share $(share "$a" "$b"))"
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 10000 && b > 10000) }' ||
  fail "the stream did not read from both equal disks ($a, $b kB/s)"
echo 10 >"$T/d1.rate"
sleep 1  # the chunks already queued on d1 are read, its new speed learned
read -r a b <<<"$(sample)"

s=$(share "$a" "$b")
echo "d1 at a quarter of d0's speed: $a $b kB/s (d0's share $s)"
awk -v b="$b" 'BEGIN { exit !(b > 1000) }' || fail "the slowed disk was left idle ($b kB/s): it still reads at 10 MiB/s"
awk -v s="$s" 'BEGIN { exit !(s >= 0.68) }' ||
  fail "d0 read $s of the stream after d1 slowed to a quarter of its speed (ideal 0.80, half when the slowdown is not seen)"
echo 40 >"$T/d1.rate"
sleep 1
read -r a b <<<"$(sample)"
s=$(share "$a" "$b")
echo "d1 back to d0's speed: $a $b kB/s (d0's share $s)"
awk -v s="$s" 'BEGIN { exit !(s <= 0.60) }' ||
  fail "d0 still read $s of the stream after d1 came back to its speed (ideal 0.50)"
stop m0 -f
wait "$reader" 2>/dev/null || true  # cut off by the stop
