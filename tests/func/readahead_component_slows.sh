# One QD1 stream under `stream` while one of two equal disks (40 MiB/s)
# slows to a quarter of its speed in the middle of it (another tenant, a
# disk retrying a sector): the read-ahead follows what the disks do now,
# and gives the slow one its share (1/5 of the chunks), not half (with
# half, the fast disk would wait for the slow one and read at 20 MiB/s),
# and what the slow one reads is used (the client reads faster than from
# the fast disk alone); when the disk is back to its speed, the shares
# are even again.
# Checked from `blkmirror stat --json` (the bytes each component read in
# a second), not from timings: each share must hold for 2 s in a row
# within 15 s (it is reached within about 1 s).
. "$(dirname "$0")/lib.sh"
need nbdcopy
need jq
emudisk d0 size=2G rate=40 fill=3
emudisk d1 size=2G rate=40 fill=3 ratefile="$T/d1.rate"
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
bm configure -b stream m0
qd1_stream m0 &
reader=$!
PIDS+=("$reader")
# kB/s read in 2 s (or $1): "d0 d1 client" (the client's: the mirror's row)
sample() { bm stat m0 -c 1 -I "${1:-2s}" --json | jq -r '"\(.rows[0].r_kBps) \(.rows[1].r_kBps) \(.rows[2].r_kBps)"'; }
# until_share WHAT TEST: samples (2 s each, 30 s at most) until the
# awk TEST holds in two samples in a row (a stream held up by a slow
# disk's chunk still has a second of memory to fill from the other):
# a, b, c are d0's, d1's and the client's kB/s, s d0's share of a + b
until_share() {
  local ok=0
  for _ in $(seq 1 15); do
    read -r a b c <<<"$(sample)"
    s=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (a + b > 0 ? a / (a + b) : 0) }')
    echo "$1: d0 $a, d1 $b, client $c kB/s (d0's share $s)"
    if awk -v a="$a" -v b="$b" -v c="$c" -v s="$s" "BEGIN { exit !($2) }"; then
      ok=$((ok + 1))
      [ "$ok" -lt 2 ] || return 0
    else
      ok=0
    fi
  done
  fail "$1: want $2 in two samples in a row within 30 s"
}
until_share "equal disks" "s >= 0.40 && s <= 0.60"
echo 10 >"$T/d1.rate"
# the chunks already queued on d1 are read, its new speed learned: d1
# reads 1/5 (when the slowdown is not seen: half, or d0 reads d1's late
# chunks again) ...
until_share "d1 at a quarter of d0's speed" "s >= 0.68"
# ... and what it reads is used: over 6 s (the client's reads come in
# bursts as chunks land), the client reads faster than d0 alone gives
# (ideal 1.25x; 1.05x when d0 reads d1's late chunks again)
read -r a b c <<<"$(sample 6s)"
echo "over 6 s: d0 $a, d1 $b, client $c kB/s"
awk -v a="$a" -v c="$c" 'BEGIN { exit !(c >= 1.15 * a) }' ||
  fail "the client read $c kB/s, d0 $a: what the slowed disk read was not used"
echo 40 >"$T/d1.rate"
until_share "d1 back to d0's speed" "s >= 0.40 && s <= 0.60"
stop m0 -f
wait "$reader" 2>/dev/null || true  # cut off by the stop
