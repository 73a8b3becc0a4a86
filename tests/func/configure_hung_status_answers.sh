# configure -b on a served mirror rewrites every label on a control job:
# while a component hangs (its label write ends only at the io-timeout),
# status and list answer at once, and a second change is refused at once.
# (It ran on the control thread before, which left every other verb,
# stop -f included, without an answer until the io-timeout.)
. "$(dirname "$0")/lib.sh"
mkimg 64 a
hangdisk p 64
P=$(disk_uri p)
bm label -n m0 "$T/a" "$P"
serve m0 --io-timeout 4
wait_complete m0
hang p
waiting_verb cfg bm configure -b round-robin m0
cfg=$waiting
answers_fast m0 "configure waited on a hung component"
t0=$(date +%s%N)
expect_error "busy with another change of its components" bm configure -b load m0
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 1000 ] || fail "the refusal took $ms ms"
wait "$cfg" && fail "configure exited 0 though p's label write timed out: $(cat "$T/cfg.out")"
has "label of $P could not be written" "$T/cfg.out" || fail "configure did not name p: $(cat "$T/cfg.out")"
answer p
bm list m0 | has "^Balance: round-robin" || fail "the balance is not round-robin: $(bm list m0)"
stop m0
# the stop's clean label write carries the new balance to p as well
for d in "$T/a" "$P"; do
  bm dump "$d" | has "Balance: round-robin" || fail "$d's label lost the algorithm"
done
