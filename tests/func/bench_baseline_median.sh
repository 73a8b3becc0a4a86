# bench compares each figure of a run with its median over the last runs
# (up to 5) on the same components that have that figure, not with the
# last run alone, so one odd run (a fast fluke, a slow spell) does not set
# the bar; what changed is said since the oldest of those runs; a figure
# no earlier run has is named as not compared.  The history is made from
# the first real run's line (jq): every figure at 0.01 MiB/s, which
# nothing real falls below, except "read B alone", given known values.
. "$(dirname "$0")/lib.sh"
need jq
filled_pair 32M $((4 * MIB))
H=$BLKMIRROR_STATE_DIR/bench-history.jsonl
K=$(uname -r)

out=$(bm bench --size 4M "$u0" "$u1" 2>&1) || fail "the first run exited $?: $out"
first=$(sed -n 1p "$H")
# fake TIME KERNEL B: the first run's line as a run at TIME on KERNEL, its
# figures at 0.01 MiB/s, "read B alone" at B (null: left out), "mirror
# read (split)" left out
fake() {
  jq -c --arg t "$1" --arg k "$2" --argjson b "$3" '.time = $t | .kernel = $k |
    .figures = [.figures[] | select(.name != "mirror read (split)") |
                .mibs = (if .name == "read B alone" then $b else 0.01 end) |
                select(.mibs != null)]' <<<"$first" || fail "jq cannot make a run"
}

# two runs before: compared with the median of the 2, nothing fell
{ fake 2026-01-01T00:01:00Z "$K" 0.01; fake 2026-01-01T00:02:00Z "$K" 0.01; } >"$H"
out=$(bm bench --size 4M "$u0" "$u1" 2>&1) || fail "bench over two slow runs exited $?: $out"
echo "$out"
has -F "no figure fell by more than 10% below its median over the last 2 runs on these components (2026-01-01 00:01 to 2026-01-01 00:02)" <<<"$out" ||
  fail "not said that it was compared with the median of the 2 runs before"
has -F "not compared (no earlier run on these components has it): mirror read (split)" <<<"$out" ||
  fail "a figure no earlier run has is not named"

# read B alone: 1e6 (the oldest, another kernel), none, 2e6, 9e6 (the
# newest): its median is 2e6 over 3 runs, since the oldest
{ fake 2026-01-01T00:01:00Z 6.1.0-26-amd64 1000000
  fake 2026-01-01T00:02:00Z "$K" null
  fake 2026-01-01T00:03:00Z "$K" 2000000
  fake 2026-01-01T00:04:00Z "$K" 9000000; } >"$H"
bench_fell 4M "read B alone"
has -E "^REGRESSION: read B alone fell (99|100)% \(2000000: the median of 3 runs -> [0-9]+ MiB/s\) since 2026-01-01 00:01 " <<<"$line" ||
  fail "not compared with the median (2000000) of the 3 runs that have it, since the oldest: $line"
has -F "(B is $u1); kernel 6.1.0-26-amd64 -> $K" <<<"$line" ||
  fail "what changed is not said since the oldest of those runs: $line"
[ "$(grep -c '^REGRESSION' <<<"$out")" -eq 1 ] || fail "figures at 0.01 MiB/s before were flagged: $out"
