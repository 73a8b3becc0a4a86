# bench reads each component alone, all in parallel, then a temporary
# mirror with every balance algorithm, prints a row and a ratio for each,
# and records the run; reading changes no byte of any component (labels
# included: the temporary mirror writes none), and a run compares itself
# with the last one on the same components.
. "$(dirname "$0")/lib.sh"
head -c $((24 * MIB)) /dev/urandom >"$T/a"
head -c $((24 * MIB)) /dev/urandom >"$T/b"
before=$(sha256sum "$T/a" "$T/b")
out=$(bm bench --size 16M "$T/a" "$T/b" 2>"$T/err") || fail "bench exited $?: $(cat "$T/err")"
echo "$out"
for row in "read A alone" "read B alone" "read all in parallel \(sum\)" \
           "mirror read \(stream\)" "mirror read \(round-robin\)" \
           "mirror read \(load\)" "mirror read \(prefer\)" "mirror read \(split\)"; do
  grep -qE "^  $row +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2}$" <<<"$out" || fail "no row '$row' with MiB/s and ratio"
done
grep -q "write" <<<"$out" && fail "write rows without --write"
grep -q "first run on these components" <<<"$out" || fail "first run not said"
[ ! -s "$T/err" ] || fail "stderr on a pipe: $(cat "$T/err")"
[ "$before" = "$(sha256sum "$T/a" "$T/b")" ] || fail "bench changed a component"

# The history: one JSON line with the figures, the components and the run.
hist=$BLKMIRROR_STATE_DIR/bench-history.jsonl
[ "$(wc -l <"$hist")" -eq 1 ] || fail "history has $(wc -l <"$hist") lines, want 1"
$PY - "$hist" "$T/a" <<'PY' || fail "history record is wrong: $(cat "$hist")"
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["components"][0]["path"] == sys.argv[2], r["components"]
assert r["components"][0]["size"] == 24 << 20
assert r["bytes"] == 16 << 20
assert r["kernel"] and r["version"] and r["time"].endswith("Z")
names = [f["name"] for f in r["figures"]]
assert "mirror read (stream)" in names and len(names) == 8, names
assert all(f["mibs"] > 0 for f in r["figures"])
PY

# Components of a real mirror (labelled, not served): read, not touched.
bm label -n m0 "$T/a" "$T/b"
before=$(sha256sum "$T/a" "$T/b")
rc=0; out=$(bm bench --size 8M --threshold 99 "$T/a" "$T/b" 2>&1) || rc=$?
[ $rc -eq 0 ] || fail "bench on labelled components exited $rc: $out"
[ "$before" = "$(sha256sum "$T/a" "$T/b")" ] || fail "bench changed a labelled component"
bm dump "$T/a" >/dev/null || fail "the label of a is gone"

# Same components, same size: compared with the last run.
rc=0; out=$(bm bench --size 8M --threshold 99 "$T/a" "$T/b" 2>&1) || rc=$?
[ $rc -eq 0 ] || fail "second run exited $rc: $out"
grep -q "no figure fell by more than 99% since the last run" <<<"$out" || fail "not compared: $out"
[ "$(wc -l <"$hist")" -eq 3 ] || fail "history has $(wc -l <"$hist") lines, want 3"
# --history with the components named as typed (relative): the 3 runs.
out=$(cd "$T" && bm bench --history a b) || fail "--history exited $?"
[ "$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} ' <<<"$out")" -eq 3 ] || fail "--history a b: $out"
