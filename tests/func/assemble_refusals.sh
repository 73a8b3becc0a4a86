# assemble refuses, recording nothing and writing nothing, whatever would
# record a mirror wrongly: a component with no label, another mirror's
# label, a mirror of the same name with another id, one given twice (or a
# copy of another), one recorded for another mirror, a name recorded
# already; and unless -f, a component the newest label names left out (it
# may hold the newest data) or one given that has left the mirror.
. "$(dirname "$0")/lib.sh"
need nbdkit
mkimg 32 a b blank o1 o2 x1 x2
bm label -n m0 "$T/a" "$T/b" >/dev/null
bm label -n other "$T/o1" "$T/o2" >/dev/null
bm forget -f m0 >/dev/null || fail "forget -f m0"
expect_usage "usage: blkmirror assemble" bm assemble m0
expect_usage "invalid mirror name '-x'" bm assemble -- -x "$T/a"
expect_usage "invalid mirror name 'a/b'" bm assemble a/b "$T/a"
sums() { md5sum "$T"/a "$T"/b "$T"/blank "$T"/o1; }
before=$(sums)
expect_error "$T/blank carries no blkmirror label, at its end or at the old ends the others. labels and --old-size give; if it grew since it was labelled, give the size it had then \\(to 4 KiB\\) with --old-size SIZE; nothing was recorded" bm assemble m0 "$T/a" "$T/blank"
expect_error "$T/nope: no such file or device; nothing was recorded" bm assemble m0 "$T/a" "$T/nope"
expect_error "$T/a is given twice" bm assemble m0 "$T/a" "$T/a"
ln -s "$T/a" "$T/a.link"
expect_error "$T/a is given twice" bm assemble m0 "$T/a" "$T/a.link"
cp "$T/b" "$T/b.copy"
expect_error "carry the label of one component \(the same disk, or a copy of it\)" \
  bm assemble m0 "$T/a" "$T/b" "$T/b.copy"
rm -f "$T/b.copy"
expect_error "$T/o1 is a component of mirror 'other' in the records \(as $T/o1\); nothing was recorded: 'blkmirror status other' shows it" bm assemble m0 "$T/a" "$T/o1"
# the same disk under another name (a symlink, a hard link) is the same
ln -s "$T/o1" "$T/o1.link"; ln "$T/o2" "$T/o2.hard"
expect_error "$T/o1 is a component of mirror 'other' in the records" bm assemble m0 "$T/a" "$T/o1.link"
expect_error "$T/o2.hard is a component of mirror 'other' in the records \(as $T/o2\)" bm assemble m0 "$T/a" "$T/o2.hard"
expect_error "mirror 'other' is already recorded" bm assemble other "$T/o1" "$T/o2"
bm forget -f other >/dev/null
expect_error "$T/o1 carries the label of mirror 'other', not 'm0'" bm assemble m0 "$T/a" "$T/o1"
# another mirror named m0 (another id)
bm label -n m0x "$T/x1" "$T/x2" >/dev/null; bm forget -f m0x >/dev/null
bm clear "$T/x1" "$T/x2" >/dev/null
mkdir -p "$T/st2"
BLKMIRROR_STATE_DIR=$T/st2 "$BLKMIRROR" label -n m0 "$T/x1" "$T/x2" >/dev/null || fail "second m0"
expect_error "$T/a and $T/x1 carry labels of two different mirrors named 'm0'" bm assemble m0 "$T/a" "$T/x1"
# b left out: refused without -f, recorded with it
expect_error "the newest label \(on $T/a\) names 2 components and one of them \(component id [0-9a-f]+; 'blkmirror dump DISK' shows a disk's\) was not given: it may hold the newest data; give every component, or -f" \
  bm assemble m0 "$T/a"
[ "$(sums)" = "$before" ] || fail "a refused assemble wrote on a component"
expect_error "no mirror named 'm0'" bm status m0
bm assemble -f m0 "$T/a" >/dev/null || fail "assemble -f with b left out"
out=$(bm status m0) || true
has "$T/a" <<<"$out" || fail "status after assemble -f: $out"
has "$T/b" <<<"$out" && fail "b recorded though not given: $out"
bm forget -f m0 >/dev/null

# a component that has left the mirror (removed while its server was down:
# its label stays) is refused as one that may hold its data
start_c() {
  nbdkit -U "$T/c.sock" -P "$T/c.pid" file "$T/c.img" >>"$T/c.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/c.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/c.pid")")
}
truncate -s 32M "$T/c.img"
start_c
C="nbd+unix:///?socket=$T/c.sock"
bm assemble m0 "$T/a" "$T/b" >/dev/null || fail "assemble m0"
serve m0
bm insert m0 "$C" >/dev/null || fail "insert c"
wait_complete m0
kill -9 "$(cat "$T/c.pid")"; rm -f "$T/c.pid" "$T/c.sock"
wait_status m0 "c.sock (DISCONNECTED" 30
bm remove m0 "$C" >/dev/null 2>&1 || fail "remove c"
stop m0
start_c
bm forget -f m0 >/dev/null
expect_error "c.sock has left mirror 'm0' \(the newest label, on $T/a, does not name it\): its data is older" \
  bm assemble m0 "$T/a" "$T/b" "$C"
bm assemble m0 "$T/a" "$T/b" >/dev/null || fail "assemble without c"
