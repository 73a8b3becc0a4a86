# bench --repeat N: the whole sequence is measured N times and each figure
# printed and recorded as the median of the rounds with its min and max
# (min <= median <= max), so that one slow measure on a busy machine does
# not trip the regression threshold on its own; a run without --repeat
# records one measure and no spread; bad counts are usage errors, and
# --history takes no --repeat.
. "$(dirname "$0")/lib.sh"
need jq
filled_pair 32M $((4 * MIB))
H=$BLKMIRROR_STATE_DIR/bench-history.jsonl

out=$(bm bench --size 4M --repeat 3 "$u0" "$u1" 2>&1) || fail "bench --repeat 3 exited $?: $out"
echo "$out"
has -x "MiB/s: the median of 3 rounds (min-max over them)" <<<"$out" ||
  fail "the table does not say its figures are medians of 3"
has -E '^ +MiB/s +min-max +x one$' <<<"$out" || fail "no min-max column"
# every figure row: name, median, min-max, ratio; min <= median <= max
rows=$(grep -E '^  (read|mirror)' <<<"$out") || fail "no figure rows"
[ "$(grep -c . <<<"$rows")" -eq 8 ] || fail "not 8 figure rows: $rows"
awk '{
    n = NF; ratio = $n; spread = $(n - 1); med = $(n - 2) + 0
    split(spread, mm, "-")
    if (!(mm[1] + 0 > 0 && mm[1] + 0 <= med && med <= mm[2] + 0)) { print "bad spread: " $0; bad = 1 }
  } END { exit bad }' <<<"$rows" || fail "a row's median is outside its min-max"
# three rounds of memory-disk reads do not all give the same figure
awk '{ split($(NF - 1), mm, "-"); if (mm[1] + 0 < mm[2] + 0) spread = 1 } END { exit !spread }' <<<"$rows" ||
  fail "no row has min < max: were the rounds measured?"

# recorded: repeat 3, each figure's median within its min and max
[ "$(grep -c . "$H")" -eq 1 ] || fail "not one run recorded"
jq -e '.repeat == 3 and (.figures | length == 8) and
       all(.figures[]; .min > 0 and .min <= .mibs and .mibs <= .max)' "$H" >/dev/null ||
  fail "the recorded run lacks repeat 3 or a figure's min/median/max: $(cat "$H")"

# a plain run: one measure, recorded as repeat 1 with no spread, and
# compared with the run before (its figures made 0.01 MiB/s, so that
# nothing real falls below them)
jq -c '.figures |= map(.mibs = 0.01 | .min = 0.01 | .max = 0.01)' "$H" >"$H.new" && mv "$H.new" "$H" ||
  fail "cannot edit the history"
out=$(bm bench --size 4M "$u0" "$u1" 2>&1) || fail "plain bench exited $?: $out"
echo "$out"
has "median of" <<<"$out" && fail "a run of one measure calls its figures medians"
has "no figure fell by more than 10% since the last run" <<<"$out" || fail "the plain run was not compared with the --repeat run"
tail -n 1 "$H" | jq -e '.repeat == 1 and all(.figures[]; has("min") | not)' >/dev/null ||
  fail "a plain run recorded a spread: $(tail -n 1 "$H")"
out=$(bm bench --history "$u0" "$u1") || fail "--history exited $?"
[ "$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} ' <<<"$out")" -eq 2 ] || fail "--history does not show the 2 runs: $out"

expect_usage "repeat '0' is not a count from 1 to 99" bm bench --repeat 0 "$u0"
expect_usage "repeat '100' is not a count from 1 to 99" bm bench --repeat 100 "$u0"
expect_usage "repeat 'x' is not a count" bm bench --repeat x "$u0"
expect_usage "repeat '-3' is not a count" bm bench --repeat -3 "$u0"
expect_usage "history only prints" bm bench --history --repeat 2
[ "$(grep -c . "$H")" -eq 2 ] || fail "a refused command line recorded a run"
