# A client write that a component holds (it does not answer) when that
# component is deactivated ends after io-timeout, acknowledged from the
# component that took it: the watchdog watches a deactivated component's
# requests too and aborts its connection (events.c abort_inactive).  The
# component is activated again later (opened again, copied) and holds the
# write.  Before, the watchdog looked only at components in service: the
# client waited for ever, and with it the idle clean and the stop.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
hangdisk p 32 $MIB          # p holds requests at 1M while hung
P=$(disk_uri p)
bm label -n m0 "$T/a" "$P" >/dev/null
serve m0 --io-timeout 2
hang p
qemu-io -f raw "$(uri m0)" -c 'write -P 0x3c 1M 64k' >"$T/w.out" 2>&1 &
wpid=$!
for _ in $(seq 1 100); do grep -qx "$MIB" "$T/p.writes" 2>/dev/null && break; sleep 0.05; done
grep -qx "$MIB" "$T/p.writes" || fail "the write never reached p"
kill -0 $wpid 2>/dev/null || fail "the write ended while p holds it: $(cat "$T/w.out")"
bm deactivate m0 "$P" >/dev/null || fail "deactivate: $(bm status m0)"
out=$(bm status m0) || true
has "p.disk.sock (INACTIVE" <<<"$out" || fail "p is not INACTIVE: $out"
t0=$(date +%s)
for _ in $(seq 1 200); do kill -0 $wpid 2>/dev/null || break; sleep 0.1; done
kill -0 $wpid 2>/dev/null && fail "the client write still waits $(( $(date +%s) - t0 )) s after p was deactivated"
wait $wpid || fail "the write failed: $(cat "$T/w.out")"
echo "the write ended $(( $(date +%s) - t0 )) s after the deactivation"
has "(deactivated): no answer for 2 s (io-timeout): what it still holds from before fails now" "$T/m0.log" ||
  fail "the log does not say why: $(cat "$T/m0.log")"
answer p
bm activate m0 "$P" >/dev/null || fail "activate: $(bm status m0)"
wait_complete m0
stop m0
cmp -n $((64 * 1024)) -i $MIB:$MIB "$T/a" "$T/p.img" || fail "p does not hold the write"
od -An -tx1 -j $MIB -N 1 "$T/a" | has 3c || fail "a does not hold the write"
