# deactivate, rebuild and configure -p run as control jobs: while one
# waits on a component that stopped answering (its label write ends only
# at the io-timeout), status and list still answer at once.  (They
# ran on the control thread before, which held status for the io-timeout.)
. "$(dirname "$0")/lib.sh"
mkimg 64 a
hangdisk p 64
P=$(disk_uri p)
bm label -n m0 "$T/a" "$P"
serve m0 --io-timeout 4
hang p
waiting_verb deact bm deactivate m0 "$P"
deact=$waiting
answers_fast m0 "deactivate waited on a hung component"
# A second change meanwhile is refused at once, naming the running one.
t0=$(date +%s%N)
expect_error "busy with another change of its components" bm configure -p 3 m0 "$T/a"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 1000 ] || fail "the refusal took $ms ms"
wait "$deact" || { cat "$T/deact.out"; fail "deactivate failed"; }
answer p
out=$(bm status m0) && fail "status exited 0 with a component INACTIVE"
grep -q "p.disk.sock (INACTIVE" <<<"$out" || fail "p is not INACTIVE: $out"
timeout 60 "$BLKMIRROR" activate --wait m0 "$P" >/dev/null || fail "activate after the hang"
wait_complete m0
bm status m0 | has "$T/a (ACTIVE)" || fail "a is not ACTIVE: $(bm status m0)"
stop m0
