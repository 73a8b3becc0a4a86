# A clean stop marks every lease CLEAN, so a restart takes them at once:
# no watching, no takeover, ready at once (measured: the wait it skips is
# 2.5 s).
. "$(dirname "$0")/lib.sh"
disk d0 64M
mkimg 64 f
bm label -n m0 "$(disk_uri d0)" "$T/f"
serve m0
stop m0
for c in "$(disk_uri d0)" "$T/f"; do
  "$TEST_TOOLS/lease_tool" dump "$c" | has "^state=clean .*mirror=m0" ||
    fail "$c: lease not clean after stop: $("$TEST_TOOLS/lease_tool" dump "$c")"
done
t0=$(date +%s%N)
serve m0
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "restart ready after $ms ms"
grep -q "taking over" "$T/m0.log" && fail "a clean lease was taken over: $(cat "$T/m0.log")"
[ "$ms" -lt 2400 ] || fail "restart after a clean stop took $ms ms (it must not wait 2.5 s)"
"$TEST_TOOLS/lease_tool" dump "$(disk_uri d0)" | has "^state=active .*pid=$(server_pid m0) " ||
  fail "restarted server holds no lease"
stop m0
