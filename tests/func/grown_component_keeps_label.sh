# A component that grew since it was labelled (a file made longer, an LV
# extended, an NBD export resized) keeps its label, lease and bitmap at its
# old end.  The start looks there (at the sizes the other labels record)
# and takes it back at its old size instead of leaving it out ("has no
# blkmirror label"); so does a reconnect of an NBD component whose export
# grew while it was away.  Before, it was ABSENT at every start, and a
# reconnect was refused "without its label".  status of the stopped
# mirror shows it as serve finds it; one absent at the start that comes
# back grown rejoins.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 32 a b r.img
filedisk r "$T/r.img"
R="$(disk_uri r)"
bm label -n m0 "$T/a" "$T/b" "$R" >/dev/null
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x47 1M 64k' >/dev/null || fail "write"
stop m0
truncate -s 48M "$T/b"
# status of the stopped mirror finds it as serve will
out=$(bm status m0) || true
has "$T/b (clean, genid [0-9]*, syncid [0-9]*; grown to 50331648 bytes, its label at its old end (33554432))" <<<"$out" ||
  fail "status of the stopped mirror: $out"
has "Note" <<<"$out" && fail "status says serve would refuse: $out"
serve m0
has "$T/b grew from 33554432 to 50331648 bytes since it was labelled: its label is at its old end, and the mirror uses its first 33554432 bytes" "$T/m0.log" ||
  fail "the log does not say b grew: $(cat "$T/m0.log")"
out=$(bm status m0) || fail "not COMPLETE with b grown: $out"
has "m0 *COMPLETE" <<<"$out" || fail "status: $out"
has "$T/b (ACTIVE)" <<<"$out" || fail "b not ACTIVE: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x48 2M 64k' >/dev/null || fail "write with b grown"

# r's export grows while it is away: taken back when it answers
disk_kill r
qemu-io -f raw "$(uri m0)" -c 'write -P 0x49 3M 64k' >/dev/null || fail "write while r is away"
wait_status m0 "r.disk.sock (DISCONNECTED" 30
truncate -s 40M "$T/r.img"
filedisk r "$T/r.img"
wait_complete m0
has "r.disk.sock grew from 33554432 to 41943040 bytes since it was labelled: its label is at its old end" "$T/m0.log" ||
  fail "the log does not say r grew: $(tail -5 "$T/m0.log")"
stop m0
for f in b r.img; do
  cmp -n $((30 * MIB)) "$T/a" "$T/$f" || fail "$f does not hold the mirror's data"
done
# the labels stayed where they were: the next start takes both again
serve m0
out=$(bm status m0) || fail "second start: $out"
has "m0 *COMPLETE" <<<"$out" || fail "status after the second start: $out"
stop m0
# r's server down at the start (ABSENT), its export grown before it is
# back: it rejoins at its old size
disk_kill r
truncate -s 44M "$T/r.img"
serve m0
wait_status m0 "r.disk.sock (ABSENT" 10
qemu-io -f raw "$(uri m0)" -c 'write -P 0x4a 4M 64k' >/dev/null || fail "write while r is absent"
filedisk r "$T/r.img"
wait_complete m0
has "r.disk.sock grew from 33554432 to 46137344 bytes" "$T/m0.log" ||
  fail "the log does not say r rejoined grown: $(tail -5 "$T/m0.log")"
stop m0
cmp -n $((30 * MIB)) "$T/a" "$T/r.img" || fail "r does not hold the mirror's data after its rejoin"
