# A removed component's slot stays in the server (REMOVED), but it is no
# longer part of the mirror: monitor, stat --prometheus and check count
# only the components there are (before: monitor said "Degraded - 2 of 4
# components ACTIVE" and ComponentAbsent for a COMPLETE mirror, prometheus
# said degraded and gave a re-inserted component the state of the slot
# before it, check listed the old slots as skipped).  A deactivated
# component is reported as such.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
bm remove m0 "$T/c" >/dev/null
bm remove m0 "$T/b" >/dev/null
bm insert --wait m0 "$T/b" >/dev/null || fail "insert --wait failed"
bm status m0 | has COMPLETE || fail "not COMPLETE: $(bm status m0)"
out=$(bm monitor --oneshot m0) || fail "monitor --oneshot exited $?"
[ -z "$out" ] || fail "monitor reported trouble on a COMPLETE mirror: $out"
prom=$(bm stat --prometheus m0)
grep -q '^blkmirror_mirror_degraded{mirror="m0"} 0$' <<<"$prom" ||
  fail "prometheus: $(grep degraded <<<"$prom")"
grep -q "^blkmirror_component_state{mirror=\"m0\",component=\"[^\"]*b\",state=\"ACTIVE\"} 1$" <<<"$prom" ||
  fail "prometheus: b not ACTIVE: $(grep component_state <<<"$prom")"
[ "$(grep -c '^blkmirror_component_state{.*} 1$' <<<"$prom")" = 2 ] ||
  fail "prometheus: not two components: $(grep component_state <<<"$prom")"
out=$(bm check m0) || fail "check exited $?: $out"
has -q "skipped" <<<"$out" && fail "check skipped removed slots: $out"
has -q "2 ACTIVE components identical" <<<"$out" || fail "check said: $out"
# deactivated: its own event and state
bm deactivate m0 "$T/b" >/dev/null
out=$(bm monitor --oneshot m0) || true
has -q "Degraded .*1 of 2 components ACTIVE" <<<"$out" || fail "monitor: $out"
has -q "ComponentDeactivated .*/b " <<<"$out" || fail "monitor: $out"
prom=$(bm stat --prometheus m0)
grep -q "^blkmirror_component_state{mirror=\"m0\",component=\"[^\"]*b\",state=\"INACTIVE\"} 1$" <<<"$prom" ||
  fail "prometheus: b not INACTIVE: $(grep component_state <<<"$prom")"
echo ok
