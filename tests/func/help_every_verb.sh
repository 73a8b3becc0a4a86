# --help and -h on every verb that `blkmirror help` lists exit 0, print the
# verb's usage (the first line `blkmirror help VERB` prints: the same
# text as VERB --help) on stdout and
# nothing on stderr, and touch nothing (no state directory appears).
. "$(dirname "$0")/lib.sh"
out=$(bm help) || fail "blkmirror help exited $?"
[ "$(bm --help)" = "$out" ] && [ "$(bm -h)" = "$out" ] || fail "--help / -h differ from help"
verbs=$(sed -n 's/^ *\(usage: \)\{0,1\}blkmirror \([a-z][a-z-]*\).*/\2/p' <<<"$out" | grep -vx VERB | sort -u)
[ "$(wc -w <<<"$verbs")" -ge 10 ] || fail "could not read the verb list: $verbs"
for v in $verbs; do
  full=$(bm help "$v") || fail "help $v exited $?"
  want=$(sed -n 1p <<<"$full")
  [[ $want == "usage: blkmirror $v"* ]] || fail "help $v says '$want'"
  [ "$("$BLKMIRROR" "$v" --help)" = "$full" ] || fail "help $v is not $v --help: $full"
  for h in --help -h; do
    rc=0
    "$BLKMIRROR" "$v" "$h" >"$T/out" 2>"$T/err" || rc=$?
    [ $rc -eq 0 ] || fail "$v $h exited $rc: $(cat "$T/out" "$T/err")"
    [ ! -s "$T/err" ] || fail "$v $h wrote to stderr: $(cat "$T/err")"
    [ "$(head -n 1 "$T/out")" = "$want" ] || fail "$v $h first line '$(head -n 1 "$T/out")', want '$want'"
  done
  # --help wins wherever it is, even after names and other options.
  rc=0; "$BLKMIRROR" "$v" somename --help >"$T/out" 2>&1 || rc=$?
  [ $rc -eq 0 ] && [ "$(head -n 1 "$T/out")" = "$want" ] || fail "$v NAME --help exited $rc: $(cat "$T/out")"
  echo "ok: $v"
done
[ ! -e "$BLKMIRROR_STATE_DIR" ] || fail "a --help created the state directory"
expect_usage "unknown verb 'nope'" bm help nope
# help --help is help itself
[ "$(bm help --help)" = "$out" ] || fail "help --help: $(bm help --help 2>&1)"
[ "$(bm help help)" = "$out" ] || fail "help help: $(bm help help 2>&1)"
echo ok
