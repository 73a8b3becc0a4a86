# configure changes the balance algorithm of a served mirror at once and
# keeps it in the labels; every algorithm reads correct data.
. "$(dirname "$0")/lib.sh"
need nbdcopy
mkimg 24 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
head -c $((23 * MIB)) /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)"
for alg in stream round-robin load prefer split; do
  bm configure -b "$alg" -s 64k m0
  bm list m0 | has "^Balance: $alg" || fail "list does not show $alg"
  nbdcopy "$(uri m0)" "$T/back"
  cmp "$T/data" "$T/back" || fail "$alg read back differs"
  rm -f "$T/back"
done
stop m0
bm dump "$T/a" | has "Balance: split" || fail "label lost the algorithm"
bm dump "$T/a" | has "Slice: 65536" || fail "label lost the slice"
bm configure -b round-robin m0
bm dump "$T/c" | has "Balance: round-robin" || fail "offline configure failed"
