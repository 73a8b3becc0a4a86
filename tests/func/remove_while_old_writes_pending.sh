# remove of a component given up while its server still holds a write to
# its label (the label write that marks the mirror dirty, stuck at the
# server; io-timeout 2 s): the label cannot be cleared for sure, since
# that held write may land after the clear.  remove says so and how to
# clear it later, rather than "its label is cleared" (or putting it back
# later).  Before, remove hung: it cleared the label through a new
# connection, whose read of the label (with no deadline) waited on the
# same held block.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
hangdisk s 65 $((65 * MIB - 4096))
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 2
hang s
# the first write marks the mirror dirty: s's label write is held
timeout 30 qemu-io -f raw "$(uri m0)" -c 'write -P 0x21 0 64k' >/dev/null ||
  fail "the write failed with a copy left"
wait_status m0 "s.disk.sock (DISCONNECTED"
out=$(bm remove m0 "$(disk_uri s)" 2>&1) || true
echo "$out"
answer s   # the held label write lands now
sleep 1
if grep -q "its label is cleared" <<<"$out"; then
  bm dump "$(disk_uri s)" >/dev/null 2>&1 &&
    fail "remove said the label was cleared, and the held write put it back: $out"
else
  grep -q "its label was left (it is stale): its server may still carry out writes" <<<"$out" ||
    fail "remove did not say why the label was left: $out"
fi
grep -q "$(disk_uri s)" <<<"$(bm status m0)" && fail "s still shown after remove"
stop m0
