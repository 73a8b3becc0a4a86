# The read-ahead's chunk size follows measurement, not what a disk says it
# is: two emulated disks with 4 ms seeks that do NOT announce themselves as
# rotating (bench/diskemu.c rotational=0: many NBD servers never set the
# flag) climb from 2 MiB to 4 MiB chunks or more, since doubling pays there
# (within three streams: a probe that noise hid is made again); on memory disks
# every decision follows the measured gain (extend only when the larger
# chunk was more than 3% faster, settle when not) and no chunk exceeds the
# memory bound.  Asserted on BM_RA_DEBUG's decisions, not on throughput.
. "$(dirname "$0")/lib.sh"
need nbdkit
need nbdcopy
export BM_RA_DEBUG=1
# two 100 MiB/s disks with 8 ms seeks that do not announce it
for d in e0 e1; do emudisk $d size=160M rate=100 seek=8 rotational=0 fill=3; done
rot=$(nbdinfo --json "$(disk_uri e0)" | jq -r '.exports[0].is_rotational')
[ "$rot" = false ] || fail "the emulated disk announces itself as rotational ($rot)"

bm label -n m0 "$(disk_uri e0)" "$(disk_uri e1)"
serve m0
bm configure -b stream m0
# A component whose probe met a noisy moment settles and probes again
# RA_REPROBE_ROUNDS measures later (within the next stream): read up to
# three streams, until each component has climbed (one stream did not
# always do under ASan on a busy VM: a 2 MiB chunk measured at 96.9
# MB/s, more than the disk can give with its seeks).  Asserted on the
# decision to climb, not on the size at the end: a component measured
# much slower than the other meanwhile (34.5 against 95.4 MB/s, this VM)
# has its chunks bounded by its share of the window (chunk_bound).
# climbed N: a probe of component N (4 MiB or more) paid over the size
# before it
climbed() { grep -q "^ra: comp $1 chunk [0-9]*: .* doubling paid" "$T/m0.log"; }
for _ in 1 2 3; do
  nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri m0)" null:
  climbed 0 && climbed 1 && break
done
stop m0
grep '^ra: ' "$T/m0.log" || fail "no read-ahead decisions logged"
for c in 0 1; do
  climbed $c || fail "component $c never climbed from 2 MiB chunks on a seeking disk (3 streams)"
done
grep -q 'rotational 1' "$T/m0.log" && fail "a component was taken as rotational"

# memory disks: every decision follows the measured gain
disk d0 160M
disk d1 160M
bm label -n m1 "$(disk_uri d0)" "$(disk_uri d1)"
serve m1
bm configure -b stream m1
# (a component given only chunks that continue its previous one measures
# nothing: read until some decision is made, three times at most)
for _ in 1 2 3; do
  nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri m1)" null:
  grep -q '^ra: comp .* chunk [0-9]*:' "$T/m1.log" && break
done
stop m1
grep '^ra: comp .* chunk [0-9]*:' "$T/m1.log" >"$T/decisions" || true
cat "$T/decisions"
if [ ! -s "$T/decisions" ]; then
  # no measure, no climb: every component is still at its starting size
  for c in 0 1; do
    size=$(sed -n "s/^ra: comp $c: chunk \([0-9]*\),.*/\1/p" "$T/m1.log")
    [ -n "$size" ] && [ "$size" -le $((2 * MIB)) ] ||
      fail "component $c of the memory mirror at '$size' without a decision"
  done
fi
awk '{
    # ra: comp N chunk SIZE: THR MB/s (before BEFORE) -> chunk NEW WHAT... (bound B, ...)
    size = $5 + 0; thr = $6 + 0; before = $9 + 0; new = $12 + 0
    sub(/\)$/, "", before)
    match($0, /bound [0-9]+/); bound = substr($0, RSTART + 6, RLENGTH - 6) + 0
    if (new > bound) { print "chunk above the memory bound: " $0; bad = 1 }
    if ($0 ~ /extend: doubling paid|keep: doubling paid/ && !(thr > before * 1.03)) {
      print "climbed without a gain: " $0; bad = 1 }
    if ($0 ~ /settle: doubling did not pay/ && !(thr <= before * 1.03)) {
      print "settled despite a gain: " $0; bad = 1 }
    if ($0 ~ /settle/ && new >= size) { print "settle did not go back: " $0; bad = 1 }
  } END { exit bad }' "$T/decisions" || fail "a chunk-size decision did not follow the measure"
