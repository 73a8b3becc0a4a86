# A component that completes every write but one (stuck at one offset)
# while it answers the others is given up after --io-timeout: the client's
# write is acknowledged from the other copy instead of waiting for ever,
# the copies are identical after the component answers again and rejoins
# (the write it never acknowledged is copied to it), and the data is there.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
hangdisk s 65 $((8 * MIB))
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 2
u=$(uri m0)
hang s
qemu-io -f raw "$u" -c 'write -P 0x77 8M 64k' >"$T/stuck.out" 2>&1 &
other_write() { qemu-io -f raw "$u" -c "write -P 0x33 $((16 * MIB + $1 * 65536)) 4k" >/dev/null; }
served_while_stuck $! "$T/stuck.out" write other_write
answer s
wait_complete m0
qemu-io -f raw -r "$u" -c 'read -P 0x77 8M 64k' >/dev/null || fail "the acknowledged write is not there"
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/s.img" || fail "copies differ after the rejoin"
