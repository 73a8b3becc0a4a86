# A component file that was deleted is still named by the relative path it
# was given (the record holds it absolute): rebuild and deactivate find it
# and say what they can do with it, as remove does.  Before, they said it
# "is not a component" while status listed it.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
rm "$T/b"
wait_status m0 "$T/b (DISCONNECTED" 10
for verb in rebuild deactivate; do
  rc=0; out=$(cd "$T" && "$BLKMIRROR" $verb m0 b 2>&1) || rc=$?
  echo "$verb: $out"
  has "is not a component" <<<"$out" && fail "$verb does not find b: $out"
  [ $rc -eq 1 ] || fail "$verb exited $rc: $out"
  has "$T/b" <<<"$out" || fail "$verb does not name the component: $out"
done
out=$(cd "$T" && "$BLKMIRROR" remove m0 b 2>&1) || fail "remove: $out"
out=$(bm status m0) || true
has "$T/b" <<<"$out" && fail "b still listed: $out"
stop m0
