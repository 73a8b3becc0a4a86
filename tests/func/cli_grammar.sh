# One grammar for label, clear, dump, stat and the top level: options
# before or after the names, one-line errors with exit 2 for a wrong
# command line, --help exits 0 with the usage.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c d
# Options after NAME and after the components.
bm label m0 -b load "$T/a" -s 64k "$T/b" -n
bm dump "$T/a" | has "Balance: load" || fail "-b after NAME was not applied"
bm dump "$T/a" | has "Slice: 65536" || fail "-s between components was not applied"
bm dump "$T/b" | has "^  Flags: NONE" || fail "-n after the components was not applied"
# Several components for dump and clear.
out=$(bm dump "$T/a" "$T/b")
[ "$(grep -c '^Metadata on' <<<"$out")" -eq 2 ] || fail "dump A B: $out"
bm clear "$T/a" "$T/b" | grep -c cleared | has -x 2 || fail "clear A B"
# getopt errors: one line, exit 2, for every verb of mine.
expect_usage "label: unknown option '-x'; usage: blkmirror label" bm label -x m1 "$T/c"
expect_usage "label: unknown option '--frob'" bm label m1 "$T/c" --frob
expect_usage "label: option '-b' needs a value" bm label m1 "$T/c" -b
expect_usage "label: option '-s' needs a value" bm label -s
expect_usage "dump: unknown option '-q'" bm dump -q "$T/c"
expect_usage "clear: unknown option '-z'" bm clear "$T/c" -z
expect_usage "stat: unknown option '--bad'" bm stat m0 --bad
expect_usage "stat: option '--json' takes no value" bm stat --json=yes m0
expect_usage "stat: option '-I' needs a value" bm stat m0 -I
expect_usage "stat: unknown option '-x'" bm stat --count=3 -xd m0
expect_usage "stat: option '--count' needs a value" bm stat m0 --count
expect_usage "interval 'x' is not a time" bm stat -I x m0
expect_usage "usage: blkmirror dump" bm dump
expect_usage "usage: blkmirror clear" bm clear
expect_usage "usage: blkmirror stat" bm stat
expect_usage "usage: blkmirror stat" bm stat m0 m1
expect_usage "no verb given" bm
expect_usage "unknown option '-x' before the verb" bm -x label
expect_usage "unknown verb 'frob'" bm help frob
# stat: a mistyped name is not "not running".
expect_error "no mirror named 'nope'" bm stat nope
bm label m2 "$T/c" "$T/d"
expect_error "mirror 'm2' is not running" bm stat m2
# --tcp ports: 1 to 65535, numbers only; exit 2 before anything else.
for p in 0 65536 99999 abc 127.0.0.1:0 127.0.0.1:70000 -1 ''; do
  expect_usage "port must be a number from 1 to 65535|HOST:PORT" \
    timeout 20 "$BLKMIRROR" serve m2 --socket "$T/s" --tcp "$p"
done
[ ! -e "$T/s" ] || fail "a refused serve left a socket"
# --help on every verb of this grammar, and at the top: exit 0, usage on stdout.
for v in label clear dump stat; do
  out=$(bm $v --help) || fail "$v --help exited $?"
  grep -q "^usage: blkmirror $v" <<<"$out" || fail "$v --help said: $out"
  out=$(bm $v -h) || fail "$v -h exited $?"
  out=$(bm help $v) || fail "help $v exited $?"
  grep -q "^usage: blkmirror $v" <<<"$out" || fail "help $v said: $out"
done
bm --help | has "blkmirror label" || fail "--help"
bm help >/dev/null || fail "help"
