# check and repair refuse what they cannot do, with one line and exit 1:
# an unknown mirror, a stopped one, one with a single ACTIVE component
# (the other still SYNCHRONIZING, named); a wrong command line is one line
# and exit 2; --help exits 0.  A SYNCHRONIZING component beside two ACTIVE
# ones is not compared, and check says it skipped it.
. "$(dirname "$0")/lib.sh"
mkimg 65 a b c d e
# data on the sources: holes are not copied, and the copies must take time
for f in c d; do head -c 64M /dev/urandom | dd of="$T/$f" conv=notrunc status=none; done
for v in check repair; do
  out=$(bm $v --help) || fail "$v --help exited $?"
  [ "$out" = "usage: blkmirror $v NAME" ] || fail "$v --help: $out"
  expect_usage "^blkmirror: usage: blkmirror $v NAME$" bm $v
  expect_usage "^blkmirror: usage: blkmirror $v NAME$" bm $v m0 m1
  expect_usage "^blkmirror: $v: unknown option '--bogus'" bm $v --bogus m0
  expect_usage "^blkmirror: $v: unknown option '-x'" bm $v m0 -x
  expect_usage "invalid mirror name '../x'" bm $v ../x
  expect_error "no mirror named 'nope'" bm $v nope
done
bm label -n m0 "$T/a" "$T/b"
expect_error "mirror 'm0' is not running; start it with 'blkmirror serve m0'" bm check m0
expect_error "mirror 'm0' is not running" bm repair m0
# m1: one ACTIVE component, the other being copied slowly.
disk s 65M --filter=delay wdelay=300ms
bm label m1 "$T/c" "$(disk_uri s)"
serve m1
expect_error "'m1' has 1 ACTIVE component; nbd.*s.disk.sock is SYNCHRONIZING: a check needs two or more" bm check m1
expect_error "'m1' has 1 ACTIVE component; .* is SYNCHRONIZING: a repair needs two or more" bm repair m1
# m2: a third component being copied: d and e are compared, t skipped.
disk t 65M --filter=delay wdelay=2
bm label m2 "$T/d" "$T/e" "$(disk_uri t)"
serve m2
for _ in $(seq 1 600); do
  out=$(bm status m2) || true
  grep -q "$T/e (ACTIVE)" <<<"$out" && break
  sleep 0.1
done
grep -q "$T/e (ACTIVE)" <<<"$out" || fail "e was not copied: $out"
grep -q "$(disk_uri t) (SYNCHRONIZING" <<<"$out" || fail "t is not being copied: $out"
out=$(bm check m2) || fail "check with a component being copied exited $?: $out"
grep -qF "m2: skipped $(disk_uri t) (SYNCHRONIZING: being copied, not compared)" <<<"$out" ||
  fail "check did not say it skipped t: $out"
grep -q "m2: 2 ACTIVE components identical" <<<"$out" || fail "check said: $out"
stop m2 -f
stop m1 -f
