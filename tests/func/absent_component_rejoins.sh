# A component missing when the mirror starts (a file moved away, an NBD
# export whose server is down) is tried again while the mirror runs: when
# it is back with its label, it rejoins SYNCHRONIZING, is copied in full
# (it holds the writes made while it was away), and the mirror is
# COMPLETE without a restart.  Before, it stayed ABSENT until a restart.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b r.img
filedisk r "$T/r.img"
ruri=$(disk_uri r)
bm label -n m0 "$T/a" "$T/b" "$ruri"
disk_kill r
mv "$T/b" "$T/b.away"
serve m0
out=$(bm status m0) || true
grep -q "$T/b (ABSENT" <<<"$out" || fail "b not ABSENT: $out"
grep -q "r.disk.sock (ABSENT" <<<"$out" || fail "the export not ABSENT: $out"
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x41 0 2M' -c 'write -P 0x42 30M 1M' >/dev/null ||
  fail "write while degraded failed"
mv "$T/b.away" "$T/b"
filedisk r "$T/r.img"
wait_complete m0
out=$(bm status m0)
echo "$out"
grep -q "$T/b (ACTIVE" <<<"$out" || fail "b not ACTIVE: $out"
grep -q "r.disk.sock (ACTIVE" <<<"$out" || fail "the export not ACTIVE: $out"
grep -q "ComponentBack .*$T/b: .*absent" "$T/m0.log" || fail "no ComponentBack for b in the log"
qemu-io -f raw "$u" -c 'write -P 0x43 4M 1M' >/dev/null || fail "write after the rejoin failed"
stop m0
same_data "$T/a" "$T/b"
same_data "$T/a" "$T/r.img"
cmp -n $((2 * MIB)) "$T/b" <(head -c $((2 * MIB)) /dev/zero | tr '\0' '\101') ||
  fail "b lacks the write made while it was away"
# the labels agree: the next start assembles all three, none ABSENT
serve m0
out=$(bm status m0)
grep -q ABSENT <<<"$out" && fail "a component ABSENT after a restart: $out"
stop m0
