# insert of several components where two name one disk leaves the mirror
# as it was: a file and a loop device over it are refused before anything
# is inserted; two URIs of one NBD export (which only the server can tell,
# through a block written and read back) show when the second is
# inserted, and the first is removed again.  Before, the first stayed
# inserted (and was copied) while the command said it failed.
. "$(dirname "$0")/lib.sh"
mkimg 64 a b e
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
wait_complete m0
if [ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null &&
   le=$(losetup -f --show "$T/e" 2>/dev/null); then
  expect_error "insert: $T/e and $le are the same disk; nothing inserted" bm insert m0 "$T/e" "$le"
fi
truncate -s 64M "$T/n.img"
filedisk n "$T/n.img"
N1="nbd+unix:///?socket=$T/n.disk.sock"
N2="nbd+unix://localhost/?socket=$T/n.disk.sock"
rc=0; out=$(bm insert m0 "$N1" "$N2" 2>&1) || rc=$?
echo "$out" >&2
[ $rc -eq 1 ] || fail "insert of two URIs of one export exited $rc"
has "is the same disk as" <<<"$out" || fail "insert did not say why"
has "$N1: removed" <<<"$out" || fail "the first URI was not removed again"
bm list m0 >"$T/list"
has "n.disk.sock" "$T/list" && fail "the export is still a component: $(cat "$T/list")"
bm status m0 | has "m0 *COMPLETE" || fail "m0: $(bm status m0)"
stop m0
