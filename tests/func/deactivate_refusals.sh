# deactivate refuses, with exit 1 and one line, what it cannot do: the last
# ACTIVE component, a component the mirror does not have, a mirror that is
# not running or not known; a wrong command line is exit 2 and one line.
# Nothing changes on a refusal.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b x
bm label -n m0 "$T/a" "$T/b"
expect_error "m0' is not running; deactivate changes a running mirror" \
  bm deactivate m0 "$T/b"
bm dump "$T/b" | has "Flags: NONE" || fail "a refusal changed the label"
serve m0
expect_usage "usage: blkmirror deactivate NAME COMPONENT" bm deactivate
expect_usage "usage: blkmirror deactivate NAME COMPONENT" bm deactivate m0
expect_usage "usage: blkmirror deactivate NAME COMPONENT" bm deactivate m0 "$T/a" "$T/b"
expect_usage "deactivate: unknown option '--wait'" bm deactivate --wait m0 "$T/b"
expect_usage "deactivate: unknown option '-x'" bm deactivate -x m0 "$T/b"
expect_error "no mirror named 'nosuch'" bm deactivate nosuch "$T/b"
expect_error "x is not a component of m0" bm deactivate m0 "$T/x"
expect_error "x is not a component of m0" bm deactivate m0 "nbd+unix:///?socket=$T/x"
# another spelling of a component's path is that component
(cd "$T" && bm deactivate m0 ./b) || fail "deactivate by a relative path failed"
out=$(bm status m0) || true
grep -q "$T/b (INACTIVE" <<<"$out" || fail "b not INACTIVE: $out"
expect_error "a is the last ACTIVE component of m0; it cannot be deactivated" \
  bm deactivate m0 "$T/a"
out=$(bm status m0) || true
grep -q "$T/a (ACTIVE)" <<<"$out" || fail "the refusal changed a: $out"
bm help deactivate | has "usage: blkmirror deactivate NAME COMPONENT" || fail "help deactivate"
stop m0
