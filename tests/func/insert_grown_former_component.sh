# A former component whose label stayed (removed while its server was
# down) and whose export then grew is inserted at its old size: its label
# and lease are looked for at its old end, so the checks a stale member
# gets (another server's lease, writes of a connection given up) are made
# there, and it is copied; the copies are equal.  Before, insert read the
# new end only and took it as a blank disk, its old lease unseen.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 32 a r.img
filedisk r "$T/r.img"
R=$(disk_uri r)
bm label -n m0 "$T/a" "$R" >/dev/null
serve m0
disk_kill r
qemu-io -f raw "$(uri m0)" -c 'write -P 0x52 5M 64k' >/dev/null || fail "write while r is away"
wait_status m0 "r.disk.sock (DISCONNECTED" 30
bm remove m0 "$R" >/dev/null 2>&1 || fail "remove r"
truncate -s 40M "$T/r.img"
filedisk r "$T/r.img"
out=$(bm insert --wait m0 "$R" 2>&1) || fail "insert of the grown former component: $out"
has "r.disk.sock grew from 33554432 to 41943040 bytes since it was labelled: its label is at its old end, and the mirror uses its first 33554432 bytes" "$T/m0.log" ||
  fail "the log does not say r was taken at its old size: $(tail -5 "$T/m0.log")"
wait_complete m0
stop m0
cmp -n $((30 * MIB)) "$T/a" "$T/r.img" || fail "r does not hold the mirror's data"
