# A local component that answers its label read at the start and then
# not the read of its lease (the kernel holds it: here a FUSE file over an
# export that holds that one read) is left out, and the start goes on:
# the lease read has its deadline, and the close of the component no
# longer waits for the read it gave up on (file.c file_close aborts a
# backend with such a read, as an export's close does).  Before, the start
# hung in that close.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 8 a
lease=$((8 * MIB - 8192))
hangdisk h 8 "$lease"          # holds the reads of its lease while hung
fuse_file h
F="$T/h.fuse/nbd"
bm label -n m0 "$T/a" "$F" >/dev/null
hang h
serve m0 --io-timeout 2
# the copy once it answers goes through FUSE and a shell per request (a
# slow disk, not a hung one, on a busy machine): a longer deadline then
bm configure --io-timeout 30 m0 >/dev/null
has "leaving out $F: .*lease" "$T/m0.log" || fail "the log does not say why: $(cat "$T/m0.log")"
out=$(bm status m0) || true
has "$F (ABSENT" <<<"$out" || fail "not ABSENT: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5e 3M 64k' >/dev/null || fail "write while it hangs"
answer h
wait_complete m0
stop m0
cmp -n $((6 * MIB)) "$T/a" "$F" || fail "the copies differ after it came back"
