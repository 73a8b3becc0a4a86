# A write that one component's server holds (stuck at one offset) while it
# answers everything else: the component is given up at io-timeout and the
# client's write acknowledged from the other copy; the server may still
# carry the write out later.  The component is not brought back while that
# can happen (its old connection is kept, shut for writing, until the
# server closes it), so a newer write to the same place is not overwritten
# by the old one landing after the component was copied.  Before, it was
# reconnected and copied at once, the newer write went to both copies, and
# the old one landed afterwards: the copies differed, status said COMPLETE.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
hangdisk s 65 $((8 * MIB))
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 2
u=$(uri m0)
hang s
timeout 30 qemu-io -f raw "$u" -c 'write -P 0x41 8M 64k' >"$T/w.out" 2>&1 ||
  { cat "$T/w.out"; fail "the first write failed"; }
# s answers everything but that write: given the time to come back
sleep 4
out=$(bm status m0 2>&1) || true
grep -q "s.disk.sock (DISCONNECTED" <<<"$out" ||
  fail "s is back while its server may still carry out the old write: $out"
qemu-io -f raw "$u" -c 'write -P 0x42 8M 64k' >/dev/null || fail "the second write failed"
answer s   # the old write lands now
wait_complete m0
qemu-io -f raw -r "$u" -c 'read -P 0x42 8M 64k' >/dev/null || fail "the newer write is not read back"
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/s.img" ||
  fail "the copies differ: the old write landed over the newer one ($(od -An -tx1 -N4 -j $((8 * MIB)) "$T/s.img"))"
