# Another server's lease written over ours on every component: the first
# one found is failed out; the engine keeps its last ACTIVE component in
# service, which the log says loudly; and this server never writes its
# lease over the intruder's again, not even at a clean stop.
. "$(dirname "$0")/lib.sh"
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
lt() { "$TEST_TOOLS/lease_tool" "$@"; }
lt write "$(disk_uri d0)" active otherhost 4242 7
lt write "$(disk_uri d1)" active otherhost 4242 7
for _ in $(seq 1 100); do
  grep -q "last ACTIVE component" "$T/m0.log" && break
  sleep 0.1
done
grep -q "another server took over its lease (host otherhost, pid 4242, mirror 'forged').* last ACTIVE component" "$T/m0.log" ||
  fail "the last ACTIVE component's lost lease was not reported: $(cat "$T/m0.log")"
out=$(bm status m0 || true)
[ "$(echo "$out" | grep -c "(FAILED: another server took over its lease")" -eq 1 ] ||
  fail "not exactly one component failed out: $out"
d0=$(lt dump "$(disk_uri d0)"); d1=$(lt dump "$(disk_uri d1)")
sleep 2.5   # two renewal intervals: a renewal would have rewritten them
[ "$(lt dump "$(disk_uri d0)")" = "$d0" ] && [ "$(lt dump "$(disk_uri d1)")" = "$d1" ] ||
  fail "a lost lease was written again"
# the one kept is not ours any more: no clean label is written over
# another server's, and the stop says so
pid=$(server_pid m0)
rc=0; out=$("$BLKMIRROR" stop m0 2>&1) || rc=$?
wait "$pid" || true
[ $rc -eq 1 ] || fail "stop exited $rc: $out"
has "m0 stopped, but not cleanly" <<<"$out" || fail "stop said: $out"
[ "$(lt dump "$(disk_uri d0)")" = "$d0" ] && [ "$(lt dump "$(disk_uri d1)")" = "$d1" ] ||
  fail "the clean stop wrote over a lost lease"
echo "$d0" | has "host=otherhost" || fail "d0: $d0"
