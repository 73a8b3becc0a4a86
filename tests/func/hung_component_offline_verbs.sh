# clear and label of an NBD component that connects and never answers give
# up after their 10 s wait and change nothing: clear says it does not
# answer (with -f too: clearing what cannot be read is not done), label -f
# refuses it ("nothing was written"); the component keeps its label.
# Before, both waited for ever (the synchronous NBD calls had no deadline);
# with a deadline alone, label went on to look for a file system with no
# deadline, and clear took a label read that ran out for a damaged one.
. "$(dirname "$0")/lib.sh"
mkimg 32 a c
hangdisk r 32 $((32 * MIB - 4096))   # holds reads of its label while hung
R=$(disk_uri r)
bm label -n m0 "$T/a" "$R" >/dev/null
r0=$(sha256sum <"$T/r.img")
hang r
for cmd in "clear $R" "clear -f $R" "label -f m1 $R $T/c"; do
  t0=$(date +%s)
  rc=0; out=$(timeout 60 "$BLKMIRROR" $cmd 2>&1) || rc=$?
  s=$(( $(date +%s) - t0 ))
  echo "$cmd: exit $rc after $s s: $out"
  [ $rc -eq 1 ] || fail "$cmd exited $rc: $out"
  [ $s -le 30 ] || fail "$cmd took $s s"
  has "r.disk.sock: does not answer: its label was not read within 10 s" <<<"$out" || fail "$cmd said: $out"
done
answer r
[ "$(sha256sum <"$T/r.img")" = "$r0" ] || fail "r changed"
bm dump "$R" | has "Name: *m0" || fail "r lost its label: $(bm dump "$R" 2>&1)"
out=$(bm dump "$T/c" 2>&1) || true
has "has no blkmirror label" <<<"$out" || fail "c was labelled: $out"
