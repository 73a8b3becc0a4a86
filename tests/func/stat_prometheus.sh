# stat --prometheus: the text exposition format once (HELP and TYPE before
# each family's samples, legal names, escaped label values), with the
# counters per component and for the mirror, the component states and the
# copy's progress; a stopped mirror is blkmirror_mirror_up 0.  stat --json
# without -I or -c prints one sample and exits.  Usage errors exit 2.
. "$(dirname "$0")/lib.sh"
need nbdkit
# a component whose name needs escaping, and a slow one (the copy runs
# while we look)
odd="$T/a\"b\\c"
head -c 64M /dev/urandom >"$odd"   # data: a hole is not copied
disk slow 64M --filter=delay wdelay=100ms
bm label m0 "$odd" "$(disk_uri slow)"
serve m0
bm configure --sync-max 1M m0     # and slowly
validate() { # the format's rules, by a small parser
  "$PY" -c '
import re, sys
name = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
label = r"[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\[\\\"n])*\""
sample = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{" + label + r"(?:," + label + r")*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$")
help_, type_, seen, done, n = {}, {}, set(), set(), 0
current = None
for ln, line in enumerate(sys.stdin, 1):
    line = line.rstrip("\n")
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        kind, fam, rest = line[2:6], *line[7:].split(" ", 1)
        assert name.match(fam), (ln, line)
        if fam != current:
            assert fam not in done, ("family split", ln, line)
            if current: done.add(current)
            current = fam
        (help_ if kind == "HELP" else type_)[fam] = rest
        if kind == "TYPE":
            assert rest in ("counter", "gauge"), (ln, line)
        continue
    m = sample.match(line)
    assert m, ("bad sample", ln, line)
    fam = m.group(1)
    assert fam == current and fam in type_ and fam in help_, ("no HELP/TYPE first", ln, line)
    if type_[fam] == "counter":
        assert fam.endswith("_total"), (ln, line)
        assert float(m.group(3)) >= 0, (ln, line)
    key = (fam, m.group(2))
    assert key not in seen, ("duplicate", ln, line)
    seen.add(key)
    n += 1
print(n, "samples")
'
}
for _ in $(seq 1 100); do
  out=$(bm stat --prometheus m0) || fail "stat --prometheus exited $?"
  grep -q "^blkmirror_sync_done_bytes{.*} [1-9]" <<<"$out" && break
  sleep 0.1
done
echo "$out" | validate || { echo "$out"; fail "not the exposition format"; }
esc='a\\"b\\\\c'   # a"b\c escaped: \" and \\
grep -q "^blkmirror_mirror_up{mirror=\"m0\"} 1$" <<<"$out" || fail "up: $out"
grep -Eq "^blkmirror_server_cpu_seconds_total\{mirror=\"m0\"\} [0-9]+\.[0-9]{6}$" <<<"$out" ||
  fail "server CPU: $out"
grep -q "^blkmirror_mirror_degraded{mirror=\"m0\"} 1$" <<<"$out" || fail "degraded: $out"
grep -q "^blkmirror_component_state{mirror=\"m0\",component=\"$T/$esc\",state=\"ACTIVE\"} 1$" <<<"$out" ||
  fail "state of a: $out"
grep -q "^blkmirror_component_state{mirror=\"m0\",component=\"nbd+unix:///?socket=$T/slow.disk.sock\",state=\"SYNCHRONIZING\"} 1$" <<<"$out" ||
  fail "state of slow: $out"
grep -q "^blkmirror_sync_total_bytes{mirror=\"m0\",component=\"nbd+unix:///?socket=$T/slow.disk.sock\"} 66060288$" <<<"$out" ||
  fail "sync total: $out"
grep -q "^blkmirror_component_written_bytes_total{mirror=\"m0\",component=\"nbd+unix:///?socket=$T/slow.disk.sock\"} [1-9]" <<<"$out" ||
  fail "no writes counted on the copy target: $out"
grep -q "^blkmirror_mirror_reads_total{mirror=\"m0\"} 0$" <<<"$out" || fail "mirror reads: $out"
# client reads show in the mirror's counters
qemu-img convert -f raw -O raw "$(uri m0)" "$T/copy" 2>/dev/null || fail "cannot read the mirror"
out=$(bm stat --prometheus m0)
read=$(sed -n 's/^blkmirror_mirror_read_bytes_total{mirror="m0"} //p' <<<"$out")
[ "${read:-0}" -ge 66060288 ] || fail "mirror read bytes: $out"
# --json: one sample, then exit
json=$(timeout 20 "$BLKMIRROR" stat --json m0) || fail "stat --json did not exit by itself"
[ "$(grep -c . <<<"$json")" -eq 1 ] || fail "not one sample: $json"
"$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); assert len(d["rows"]) == 3' <<<"$json" || fail "json: $json"
# usage errors
expect_usage "usage: blkmirror stat" bm stat --prometheus
expect_usage "takes no other option" bm stat --prometheus -I 1s m0
expect_usage "takes no other option" bm stat --prometheus --json m0
expect_usage "invalid mirror name" bm stat --prometheus 'no/such'
expect_error "no mirror named 'nope'" bm stat --prometheus m0 nope
stop m0 -f
# stopped: up 0, still the format
out=$(bm stat --prometheus m0) || fail "stat --prometheus on a stopped mirror exited $?"
echo "$out" | validate || { echo "$out"; fail "not the exposition format"; }
grep -q "^blkmirror_mirror_up{mirror=\"m0\"} 0$" <<<"$out" || fail "up 0: $out"
[ "$(grep -vc "^#" <<<"$out")" -eq 1 ] || fail "samples of a stopped mirror: $out"
