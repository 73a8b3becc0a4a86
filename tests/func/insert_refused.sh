# insert refuses, with one line and nothing changed on disk: a component
# labeled for another mirror (clear it first), one too small, the same
# component twice (same path, another path to the same file), a file
# holding a file system (unless -f), and a mirror that is not running.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
mkimg 64 a b other1 other2 fs
mkimg 32 small
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/other1" "$T/other2"
mkfs.ext4 -q -F "$T/fs" 16M
ln -s "$T/b" "$T/b-link"
ln "$T/b" "$T/b-hard"
expect_error "mirror 'm0' is not running; insert works on a running mirror: start it with 'blkmirror serve m0" bm insert m0 "$T/small"
serve m0
sums() { for f in other1 small fs a b; do sha256sum "$T/$f"; done; }
# the running mirror's own components change (labels, leases): compare
# only the files that must not
before=$(for f in other1 small fs; do sha256sum "$T/$f"; done)
expect_error "other1 is labeled for mirror 'm1'; clear it first with blkmirror clear $T/other1" bm insert m0 "$T/other1"
expect_error "small is too small: 33554432 bytes; m0 needs" bm insert m0 "$T/small"
expect_error "$T/b is already a component of m0" bm insert m0 "$T/b"
expect_error "is already a component of m0" bm insert m0 "$T/b-link"
expect_error "b-hard is .*/b, already a component of m0" bm insert m0 "$T/b-hard"
expect_error "fs holds a file system \(ext4\), which the sync would overwrite; insert -f to go ahead" bm insert m0 "$T/fs"
expect_error "no mirror named 'nosuch'" bm insert nosuch "$T/fs"
after=$(for f in other1 small fs; do sha256sum "$T/$f"; done)
[ "$before" = "$after" ] || fail "a refused insert changed a file"
out=$(bm status m0)
[ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] && ! grep -q "$T/other1\|$T/small\|$T/fs" <<<"$out" || fail "a refused insert changed the mirror: $out"
[ "$(wc -l <"$BLKMIRROR_STATE_DIR/m0.components")" -eq 2 ] || fail "a refused insert changed the state list"
# -f goes ahead over the file system.
bm insert -f --wait m0 "$T/fs" >/dev/null || fail "insert -f failed"
out=$(bm status m0) || true
grep -q "$T/fs (ACTIVE)" <<<"$out" || fail "fs not ACTIVE after insert -f --wait"
stop m0
same_data "$T/a" "$T/fs"
