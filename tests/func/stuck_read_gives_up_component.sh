# A component that answers every request but one (a read stuck at one
# offset: a lost reply, a sector the disk retries for ever) is given up
# after --io-timeout although it keeps completing other reads: the stuck
# client read is then served from the other copy, status says why, and
# once the component answers again it rejoins.  ("Completed nothing for
# io-timeout" alone never fires here: this hung the client for ever.)
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
hangdisk s 65 $((8 * MIB))
bm label -n -b prefer m0 "$T/a" "$(disk_uri s)"
bm configure -p 5 m0 "$(disk_uri s)" || fail "configure -p"
serve m0 --io-timeout 2
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x5a 8M 64k' >/dev/null || fail "write"
hang s
qemu-io -f raw -r "$u" -c 'read -P 0x5a 8M 4k' >"$T/stuck.out" 2>&1 &
# Other reads go on being answered by s (prefer: priority 5) meanwhile.
other_read() { qemu-io -f raw -r "$u" -c "read $((16 * MIB + $1 * 65536)) 4k" >/dev/null; }
served_while_stuck $! "$T/stuck.out" read other_read
answer s
wait_complete m0
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/s.img" || fail "copies differ after the rejoin"
