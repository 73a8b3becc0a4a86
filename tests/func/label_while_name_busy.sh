# label and assemble hold the mirror's lock while they work: one that
# finds the name held by another verb (a second label of the same name,
# an assemble, a forget) is refused, saying who holds it, and writes no
# label and no record (before, both went ahead and the last record won,
# naming disks whose labels the other had written).
. "$(dirname "$0")/lib.sh"
need flock
mkimg 32 a b c d
mkdir -p "$BLKMIRROR_STATE_DIR"
# another verb at work on m0: its pid in the lock file, the lock held
( echo "$BASHPID label" >"$BLKMIRROR_STATE_DIR/m0.lock"
  exec flock -o "$BLKMIRROR_STATE_DIR/m0.lock" sleep 60 ) &
holder=$!
for _ in $(seq 1 100); do
  flock -n "$BLKMIRROR_STATE_DIR/m0.lock" true 2>/dev/null || break; sleep 0.05
done
! flock -n "$BLKMIRROR_STATE_DIR/m0.lock" true || fail "the lock is not held"
expect_error "mirror 'm0' is busy: pid $holder \(label\); try again" bm label m0 "$T/a" "$T/b"
expect_error "mirror 'm0' is busy: pid $holder \(label\); try again" bm assemble m0 "$T/c" "$T/d"
for f in a b c d; do
  out=$(bm dump "$T/$f" 2>&1) && fail "$f got a label: $out"
done
[ ! -e "$BLKMIRROR_STATE_DIR/m0.components" ] || fail "a record was written"
ls "$BLKMIRROR_STATE_DIR" | has tmp && fail "a temporary record was left"
kill "$holder"; wait "$holder" 2>/dev/null || true
# free again: both work (forget drops label's record, and assemble
# records m0 again from the labels)
bm label m0 "$T/a" "$T/b" >/dev/null || fail "label after the holder left failed"
bm forget -f m0 >/dev/null
bm assemble m0 "$T/a" "$T/b" >/dev/null || fail "assemble after the holder left failed"
out=$(bm status m0 2>&1) || true
has "$T/a" <<<"$out" || fail "assembled m0 does not list a: $out"
