# A local component whose reads the kernel holds (a hung disk, an NFS
# server gone: here a FUSE file over an NBD export that stops answering)
# no longer hangs the start: its label read gives up at io-timeout, the
# component is left out ("the kernel holds the read") and the mirror
# serves from the other; once the file answers again it rejoins and is
# copied.  Meanwhile status says why it is not taken back yet (the
# request given up on is still in the kernel), not "in use by a running
# blkmirror".  Before, serve never got past the label read.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 8 a
hangdisk h 8
fuse_file h
F="$T/h.fuse/nbd"
bm label -n m0 "$T/a" "$F" >/dev/null
hang h
t0=$(date +%s)
serve m0 --io-timeout 2
# the copy once it answers goes through FUSE and a shell per request (a
# slow disk, not a hung one, on a busy machine): a longer deadline then
bm configure --io-timeout 30 m0 >/dev/null
t1=$(date +%s)
# io-timeout, and the bounded wait for what the kernel still holds
[ $((t1 - t0)) -le 15 ] || fail "the start took $((t1 - t0)) s"
has "leaving out $F: does not answer: its label was not read within 2 s (the kernel holds the read)" "$T/m0.log" ||
  fail "the log does not say why: $(cat "$T/m0.log")"
out=$(bm status m0) || true
has "m0 *DEGRADED" <<<"$out" || fail "not DEGRADED: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 0 64k' >/dev/null || fail "write while it hangs"
wait_status m0 "last try .* ago: $F: requests given up on (it did not answer) are still in the kernel" 10
answer h
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x5a 0 64k' >/dev/null || fail "the write reads back wrong"
stop m0
cmp -n $((6 * MIB)) "$T/a" "$F" || fail "the copies differ after it came back"
