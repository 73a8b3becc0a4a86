# The read-ahead's chunk size follows measurement, not what a disk says it
# is (readahead.c learn): each chunk's first piece against its later ones
# measures the positioning a chunk costs, and a component's chunk doubles
# while that pays.  Two emulated disks with 8 ms seeks that do NOT announce
# themselves as rotating (bench/diskemu.c rotational=0: many NBD servers
# never set the flag) climb from 2 MiB chunks; two that do not seek come
# back to their floor (2 MiB: two pieces) even when a fresh server's
# warm-up made them climb; and every decision logged follows the measure
# it prints (double only if that pays at the lower quartile, halve only
# if doubling the half would not pay at the upper one, never past the
# floor or the memory bound).  Asserted on BM_RA_DEBUG's decisions, not on
# throughput.
. "$(dirname "$0")/lib.sh"
need nbdkit
need nbdcopy
export BM_RA_DEBUG=1
MIB=1048576

# The decisions in LOG follow the measures they print:
#   ra: comp N chunk SIZE: positioning MED ms (quartiles Q1 Q3), transfer
#   T MB/s -> chunk NEW WHAT... (floor F, bound B, rotational R)
# (gains computed from the printed, rounded figures: only clear breaches
# count, 0.5% either side of the 3% threshold)
check_decisions() {
  awk '/^ra: comp [0-9]+ chunk [0-9]+: positioning/ {
      size = $5 + 0; q1 = $10 + 0; q3 = $11 + 0; t = $13 + 0; new = $17 + 0
      match($0, /floor [0-9]+/); floor = substr($0, RSTART + 6, RLENGTH - 6) + 0
      match($0, /bound [0-9]+/); bound = substr($0, RSTART + 6, RLENGTH - 6) + 0
      n++
      if (t <= 0) { print "no transfer speed: " $0; bad = 1; next }
      # gain of doubling a chunk of c bytes with positioning p ms
      # (ns per byte: 1000 / t, t in MB/s)
      x1 = q1 * 1e6 / (size * 1000 / t); g1 = x1 > 0 ? 2 * (1 + x1) / (2 + x1) : 1
      x3 = q3 * 1e6 / (size / 2 * 1000 / t); g3 = x3 > 0 ? 2 * (1 + x3) / (2 + x3) : 1
      if (new > bound) { print "above the memory bound: " $0; bad = 1 }
      if (new < floor) { print "below the floor: " $0; bad = 1 }
      if ($0 ~ /-> chunk [0-9]+ double/) {
        if (new != 2 * size) { print "double is not twice: " $0; bad = 1 }
        if (g1 < 1.025) { print "doubled without a gain: " $0; bad = 1 }
      } else if ($0 ~ /-> chunk [0-9]+ halve/) {
        if (new * 2 != size) { print "halve is not half: " $0; bad = 1 }
        if (g3 > 1.035) { print "halved although doubling the half pays: " $0; bad = 1 }
      } else if ($0 ~ /-> chunk [0-9]+ keep/) {
        if (new != size) { print "keep changed the size: " $0; bad = 1 }
        if (g1 > 1.035 && 2 * size <= bound) { print "kept although doubling pays: " $0; bad = 1 }
        if (g3 < 1.025 && size / 2 >= floor) { print "kept although the half would do: " $0; bad = 1 }
      } else { print "unknown decision: " $0; bad = 1 }
    } END { if (!n) { print "no decision logged"; bad = 1 } exit bad }' "$1"
}

# Two 100 MiB/s disks with 8 ms seeks that do not announce it.
stream_mirror m0 e0 e1 size=160M rate=100 seek=8 rotational=0 fill=3
rot=$(nbdinfo --json "$(disk_uri e0)" | jq -r '.exports[0].is_rotational')
[ "$rot" = false ] || fail "the emulated disk announces itself as rotational ($rot)"
# climbed N: component N doubled from its 2 MiB start
climbed() { has "^ra: comp $1 chunk 2097152: .* double: doubling pays" "$T/m0.log"; }
for _ in 1 2 3; do
  qd1_stream m0
  climbed 0 && climbed 1 && break
done
stop m0
for c in 0 1; do
  climbed $c || fail "component $c never climbed from 2 MiB chunks on a seeking disk (3 streams)"
done
has 'rotational 1' "$T/m0.log" && fail "a component was taken as rotational"
check_decisions "$T/m0.log" || fail "a chunk-size decision on seeking disks did not follow its measure"
# 8 ms over 20 ms of transfer (2 MiB at 100 MiB/s): what the first piece
# measured must show the seek
awk '/^ra: comp [0-9]+ chunk 2097152: positioning/ && $7 + 0 >= 4 { ok = 1 } END { exit !ok }' \
  "$T/m0.log" || fail "no 2 MiB measure of the seeking disks saw their positioning (>= 4 ms)"

# Two 100 MiB/s disks that do not seek: back at the floor (2 MiB) once
# measured, whatever the warm-up of a fresh server and disks did.
stream_mirror m1 f0 f1 size=160M rate=100 fill=4
# the last decision of component $1 (after the first, which a fresh
# server's warm-up may have made) is at the floor
at_floor() {
  local last
  last=$(sed -n "s/^ra: comp $1 chunk [0-9]*: positioning .* -> chunk \([0-9]*\) .*/\1/p" "$T/m1.log" |
         sed 1d | tail -n 1)
  [ "$last" = $((2 * MIB)) ]
}
# Two streams, and up to two more while a component is not back there:
# on a busy machine (the ASan build in CI, other tests beside it) the
# noise of a measure looks like positioning, and one stream may keep a
# 4 MiB chunk a while; a product that never comes back fails.
qd1_stream m1
for _ in 1 2 3; do
  qd1_stream m1
  at_floor 0 && at_floor 1 && break
done
stop m1
check_decisions "$T/m1.log" || fail "a chunk-size decision on flat disks did not follow its measure"
for c in 0 1; do
  sizes=$(sed -n "s/^ra: comp $c chunk [0-9]*: positioning .* -> chunk \([0-9]*\) .*/\1/p" "$T/m1.log" | sed 1d)
  n=$(echo "$sizes" | grep -c .) || true
  echo "component $c: decisions after the first: $(echo $sizes)"
  [ "$n" -ge 2 ] || fail "component $c of the flat disks made too few decisions ($n) in two streams"
  at_floor $c || fail "component $c of flat disks is not back at its floor (2 MiB) after 4 streams: $(echo $sizes)"
done
