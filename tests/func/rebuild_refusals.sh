# rebuild refuses, with exit 1 and one line: the only ACTIVE component (it
# would be the source), an INACTIVE one (activate is the verb), a
# DISCONNECTED one (reconnected by itself), a component the mirror does not
# have, a mirror that is not running; a wrong command line is exit 2.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
disk d 16M
bm label -n m0 "$T/a" "$T/b" "$(disk_uri d)"
expect_error "m0' is not running; rebuild changes a running mirror" bm rebuild m0 "$T/b"
serve m0
expect_usage "usage: blkmirror rebuild \[--wait\] NAME COMPONENT" bm rebuild
expect_usage "usage: blkmirror rebuild \[--wait\] NAME COMPONENT" bm rebuild m0
expect_usage "rebuild: unknown option '-f'" bm rebuild -f m0 "$T/b"
expect_error "nosuch is not a component of m0" bm rebuild m0 "$T/nosuch"
disk_kill d
for _ in $(seq 1 200); do
  out=$(bm status m0) || true; grep -q "DISCONNECTED" <<<"$out" && break; sleep 0.05
done
grep -q "d.disk.sock (DISCONNECTED" <<<"$out" || fail "d not DISCONNECTED: $out"
expect_error "is DISCONNECTED: it is reconnected automatically" bm rebuild m0 "$(disk_uri d)"
bm deactivate m0 "$T/b"
expect_error "b is INACTIVE; 'blkmirror activate' brings it back" bm rebuild m0 "$T/b"
expect_error "a is the only ACTIVE component of m0" bm rebuild m0 "$T/a"
out=$(bm status m0) || true
grep -q "$T/a (ACTIVE)" <<<"$out" || fail "a refusal changed a: $out"
stop m0
