# A component that answers the read of its label at the start and then
# not the read of its bitmap header is left out (ABSENT, "does not
# answer") after the header read's io-timeout, the mirror starts with the
# other, and the component rejoins once it answers.  Before the deadline
# the start waited for ever; with a deadline and nothing else the start
# went on with it and then failed at its label write.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
hangdisk h 32
H=$(disk_uri h)
bm label -n m0 "$T/a" "$H" >/dev/null
hdr=$(( $(bitmap_block "$H") - 4096 ))
disk_kill h; rm -f "$T/h.disk.sock" "$T/h.disk.pid"
hangdisk h 32 "$hdr"        # holds reads of its header while hung
hang h
serve m0 --io-timeout 2
out=$(bm status m0) || true
has "h.disk.sock (ABSENT" <<<"$out" || fail "h not ABSENT: $out"
has "leaving out .*h.disk.sock: does not answer: its bitmap header was not read within 2 s" "$T/m0.log" ||
  fail "the log does not say why: $(cat "$T/m0.log")"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x4d 2M 64k' >/dev/null || fail "write while h hangs"
answer h
wait_complete m0
stop m0
cmp -n $((64 * 1024)) -i $((2 * MIB)):$((2 * MIB)) "$T/a" "$T/h.img" || fail "h does not hold the write"
