# The metadata writes that a client write may wait for go to every
# component at once, not one after another: marking the mirror dirty (the
# label of each component, then a flush of each) and marking a region of
# the write-intent bitmap (its block on each, then a flush).  So the first
# write after an idle spell waits one component's write time, not the sum
# over the components.  Shown on the disks' own request logs (nbdkit's log
# filter, each write held 300 ms by the delay filter): each label write and
# each bitmap block write on one disk overlaps the same write on the other.
# (The version that wrote one component after the other never overlapped.)
. "$(dirname "$0")/lib.sh"
need qemu-io
for d in d0 d1; do
  disk "$d" 64M --filter=log --filter=delay logfile="$T/$d.reqlog" delay-write=300ms
done
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
# the mirror is clean after its start; wait for the start's own writes
sleep 3
for d in d0 d1; do wc -l <"$T/$d.reqlog" >"$T/$d.mark"; done
start=$(date +%s%N)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 1M 64k' >/dev/null || fail "write failed"
echo "first write after idle: $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
stop m0
# span D LO HI: "start end" (seconds) of D's first write at an offset in
# [LO, HI) after the mark, from the log's "Write id=N offset=..." and
# "...Write id=N return" lines.
span() {
  tail -n +"$(( $(cat "$T/$1.mark") + 1 ))" "$T/$1.reqlog" | awk -v lo=$(($2)) -v hi=$(($3)) '
    function days(d,   a, y, m) { split(d, a, "-"); y = a[1]; m = a[2] + 0
      if (m <= 2) { y--; m += 12 }   # days from a fixed epoch (civil calendar)
      return 365 * y + int(y / 4) - int(y / 100) + int(y / 400) + int((153 * (m - 3) + 2) / 5) + a[3] }
    function secs(d, t,   a) { split(t, a, ":"); return (days(d) % 100000) * 86400 + a[1] * 3600 + a[2] * 60 + a[3] }
    function hex(h,   i, v) { v = 0; h = tolower(h)
      for (i = 3; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
      return v }
    / Write id=/ && !/\.\.\.Write/ {
      match($0, /id=[0-9]+/); id = substr($0, RSTART + 3, RLENGTH - 3)
      match($0, /offset=0x[0-9a-f]+/); off = hex(substr($0, RSTART + 7, RLENGTH - 7))
      if (want == "" && off >= lo && off < hi) { want = id; s = secs($1, $2) }
    }
    /\.\.\.Write id=/ && want != "" {
      match($0, /id=[0-9]+/); if (substr($0, RSTART + 3, RLENGTH - 3) == want) { printf "%.6f %.6f\n", s, secs($1, $2); want = "done" }
    }'
}
overlap() { # WHAT LO HI
  local a b
  a=$(span d0 "$2" "$3"); b=$(span d1 "$2" "$3")
  [ -n "$a" ] && [ -n "$b" ] || fail "no $1 write found on both disks (d0: '$a', d1: '$b')"
  echo "$1 writes: d0 $a, d1 $b" >&2
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
    exit !(x[1] < y[2] && y[1] < x[2]) }' ||
    fail "the $1 writes went one after the other (d0: $a, d1: $b)"
}
S=$((64 * MIB))
overlap label $((S - 4096)) $S
overlap "bitmap block" $((S - MIB + 4096)) $((S - 8192))
