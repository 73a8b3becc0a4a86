# bench compares a run with the last runs on the same components (up to
# 5): each figure with its median over them, not with the last run alone,
# so one odd run (a fast fluke, a slow spell) does not set the bar; what
# changed is said since the oldest of them.  The history is edited to give
# "read B alone" three known values (the newest the highest) and the
# oldest run another kernel: the next run is flagged against the median,
# names it, and names the kernel change.
. "$(dirname "$0")/lib.sh"
need jq
filled_pair 32M $((4 * MIB))
H=$BLKMIRROR_STATE_DIR/bench-history.jsonl

for i in 1 2 3; do
  out=$(bm bench --size 4M --threshold 99 "$u0" "$u1" 2>&1) || fail "run $i exited $?: $out"
done
echo "$out"
has "no figure fell by more than 99% below its median over the last 2 runs on these components" <<<"$out" ||
  fail "the third run does not say it was compared with the median of the 2 before"

# B alone: 1e6, 2e6 and, newest, 9e6 MiB/s (median 2e6, far above anything
# real); the oldest run had another kernel
jq -c --slurp 'to_entries | map(.value as $r | .key as $k |
    $r | .figures |= map(if .name == "read B alone" then .mibs = ([1000000, 2000000, 9000000][$k]) else . end)
       | (if $k == 0 then .kernel = "6.1.0-26-amd64" else . end)) | .[]' "$H" >"$H.new" &&
  mv "$H.new" "$H" || fail "cannot edit the history"
[ "$(grep -c . "$H")" -eq 3 ] || fail "the edited history does not hold 3 runs"

bench_fell 4M "read B alone"
has -E "^REGRESSION: read B alone fell (99|100)% \(2000000: the median of the last 3 runs -> [0-9]+ MiB/s\) since [0-9-]+ [0-9:]+ " <<<"$line" ||
  fail "not compared with the median (2000000) of the last 3 runs: $line"
oldest=$(jq -r .time "$H" | sed -n 1p | cut -c1-16 | tr T ' ')
has -F "since $oldest (B is $u1); kernel 6.1.0-26-amd64 -> $(uname -r)" <<<"$line" ||
  fail "what changed is not said since the oldest run ($oldest): $line"
