# The second field report: the same disks got slower and only a hand-run
# dd told.  Two runs of bench on the same two NBD components, the second
# with one of them slowed (nbdkit's delay filter): the second names the
# figures that fell, by how much, and exits 3.  --history prints both
# runs; --svg draws them (valid XML, a line per figure).  Usage errors
# exit 2, a missing component 1, each with one line.
. "$(dirname "$0")/lib.sh"
filled_pair 64M $((8 * MIB))
out=$(bm bench --size 8M "$u0" "$u1" 2>&1) || fail "first run exited $?: $out"
echo "$out"
grep -q "first run on these components" <<<"$out" || fail "first run not said"

# What changed is said: pretend the first run had another kernel.
sed -i 's/"kernel":"[^"]*"/"kernel":"6.1.0-26-amd64"/' "$BLKMIRROR_STATE_DIR/bench-history.jsonl"

# d1 again on the same socket, now 40 ms per read (a fall of 90% or more:
# far beyond the noise of a busy machine)
disk_kill d1
for _ in $(seq 1 100); do kill -0 "$(cat "$T/d1.disk.pid")" 2>/dev/null || break; sleep 0.05; done
rm -f "$T/d1.disk.sock" "$T/d1.disk.pid"
disk d1 64M --filter=delay rdelay=40ms
head -c $((8 * MIB)) /dev/urandom | nbdcopy - "$u1" || fail "cannot fill d1"
bench_fell 8M "read B alone"
grep -qE "^REGRESSION: read B alone fell [0-9]+% \([0-9]+ -> [0-9]+ MiB/s\) since [0-9-]+ [0-9:]+ " <<<"$line" ||
  fail "not said by how much and since when: $line"
grep -qF "(B is $u1); kernel 6.1.0-26-amd64 -> $(uname -r)" <<<"$line" ||
  fail "B's path or what changed not said: $line"
grep -q "^REGRESSION: mirror read (round-robin) fell" <<<"$out" || fail "the mirror's fall is not named"

out=$(bm bench --history --svg "$T/h.svg" "$u0" "$u1") || fail "--history exited $?"
echo "$out"
[ "$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} ' <<<"$out")" -eq 2 ] || fail "--history does not show 2 runs"
grep -q "mirror read (split)" <<<"$out" || fail "--history does not name the figures"
$PY - "$T/h.svg" <<'PY' || fail "the SVG is not what it should be"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
lines = [e for e in root.iter() if e.tag.endswith("polyline") or e.tag.endswith("path")]
assert len(lines) == 8, len(lines)          # one per figure
for l in lines:
    assert len(l.get("points", l.get("d", "")).split()) == 2, l.attrib  # two runs
PY
expect_error "no bench run recorded on these components" bm bench --history "$T/nothing"

expect_usage "usage: blkmirror bench" bm bench
expect_usage "svg goes with --history" bm bench --svg "$T/x.svg" "$u0"
expect_usage "threshold '0' is not a percentage" bm bench --threshold 0 "$u0"
expect_usage "size 'lots' is not a size" bm bench --size lots "$u0"
expect_usage "history only prints" bm bench --history --write
expect_usage "yes confirms --write" bm bench --yes "$u0"
expect_usage "unknown option '--fast'" bm bench --fast "$u0"
expect_error "$T/missing" bm bench "$T/missing"
[ "$(wc -l <"$BLKMIRROR_STATE_DIR/bench-history.jsonl")" -eq 2 ] || fail "refused runs were recorded"
# A damaged line in the history is left out, and said so.
echo '{"time":"2026-' >>"$BLKMIRROR_STATE_DIR/bench-history.jsonl"
out=$(bm bench --history 2>&1) || fail "--history with a damaged line exited $?"
grep -q "1 line of .*bench-history.jsonl could not be read and was left out" <<<"$out" || fail "damaged line not said: $out"
[ "$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} ' <<<"$out")" -eq 2 ] || fail "runs lost to a damaged line"
