# The suite runs under `set -o pipefail`: a reader at the end of a pipe
# that exits before its input ends (grep -q at its match, head -n 1) breaks
# the writer's pipe, and the pipeline fails although the check held (bash's
# echo writes a pipe line by line; clear_forgets failed so in CI).  No test
# may use one; lib.sh's `has` is grep -q reading to the end.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")" && pwd)
# early_exits FILE...: the offending lines, as FILE:LINE: TEXT
early_exits() {
  grep -nHE '\|[[:space:]]*(grep[[:space:]]+-[a-zA-Z]*q|head[[:space:]]+(-n[[:space:]]*)?-?1([^0-9]|$))' "$@" |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true
}
# the check finds each kind (so that it can fail)
cat >"$T/bad.sh" <<'BAD'
echo "$out" | grep -q x || fail
bm status m0 | grep -qx y || fail
x=$(cmd | head -n 1)
x=$(cmd | head -1 | tr -d ' ')
# a comment | grep -q is fine
y=$(head -n 1 <<<"$out")
BAD
n=$(early_exits "$T/bad.sh" | wc -l)
[ "$n" -eq 4 ] || fail "the check found $n of 4 early exits: $(early_exits "$T/bad.sh")"
found=$(early_exits $(ls "$src"/*.sh | grep -v /tests_no_early_pipe_exit.sh))
[ -z "$found" ] || fail "early-exiting readers at the end of a pipe (use has, sed -n 1p):
$found"
