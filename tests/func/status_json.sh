# status --json: a JSON array, one object per mirror (name, state, running,
# pid, components with path, state, sync_percent, reason), parsed by jq.
. "$(dirname "$0")/lib.sh"
need jq
mkimg 16 a b c d
mkimg 64 e f
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"
head -c $((40 * MIB)) /dev/urandom | dd of="$T/e" conv=notrunc status=none
bm label m2 "$T/e" "$T/f"
bm clear "$T/b" >/dev/null
serve m0
j=$(bm status --json) || [ $? -eq 2 ] || fail "status --json failed"
echo "$j" | jq -e 'length == 3' >/dev/null || fail "not 3 mirrors: $j"
echo "$j" | jq -e '.[] | select(.name == "m0") | .state == "DEGRADED" and .running and (.pid | type) == "number"' >/dev/null || fail "m0 wrong: $j"
echo "$j" | jq -e --arg a "$T/a" --arg b "$T/b" '.[] | select(.name == "m0") | .components |
  (.[0].path == $a and .[0].state == "ACTIVE" and .[0].sync_percent == null and .[0].reason == null) and
  (.[1].path == $b and .[1].state == "ABSENT" and (.[1].reason | test("no blkmirror label")))' >/dev/null || fail "m0 components wrong: $j"
echo "$j" | jq -e '.[] | select(.name == "m1") | .state == "STOPPED" and (.running | not) and .pid == null and (.components | length) == 2 and .components[0].state == "CLEAN"' >/dev/null || fail "m1 wrong: $j"
echo "$j" | jq -e '.[] | select(.name == "m2") | .components[1].state == "SYNCHRONIZING" and .components[1].sync_percent == 0' >/dev/null || fail "m2 wrong: $j"
# One name, and options after it.
{ bm status m1 --json || true; } | jq -e 'length == 1 and .[0].name == "m1"' >/dev/null || fail "status m1 --json"
# A path with a quote and a space survives the escaping.
mkdir "$T/we\"ird dir"
mkimg 16 'we"ird dir/g' h
bm label -n m3 "$T/we\"ird dir/g" "$T/h"
serve m3
bm status --json m3 | jq -e --arg g "$T/we\"ird dir/g" '.[0].components[0].path == $g and .[0].state == "COMPLETE"' >/dev/null \
  || fail "escaping: $(bm status --json m3)"
stop m3
stop m0
