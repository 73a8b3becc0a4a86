# When no component takes the start's label write (both hang on it), the
# start is refused, after the io-timeout, with a message that says so; it
# neither serves from a mirror whose labels do not say which data is newest
# nor waits for ever.  Once the components answer, the mirror starts and
# holds what it held.
. "$(dirname "$0")/lib.sh"
need qemu-io
for d in x y; do hangdisk $d 32; done
X=$(disk_uri x) Y=$(disk_uri y)
bm label -n m0 "$X" "$Y" >/dev/null
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x3c 1M 64k' >/dev/null || fail "write"
stop m0
for d in x y; do
  disk_kill $d; rm -f "$T/$d.disk.sock" "$T/$d.disk.pid"
  hangdisk $d 32 "write:$(( 32 * MIB - 4096 ))"
  hang $d
done
rc=0
out=$(timeout 60 "$BLKMIRROR" serve m0 --socket "$T/m0.sock" --io-timeout 2 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "serve exited $rc, want 1: $out"
has "mirror 'm0': cannot write labels: .*no ACTIVE component took the start's label, so the mirror does not start" <<<"$out" ||
  fail "serve said: $out"
[ ! -S "$T/m0.sock" ] || fail "a socket was left behind"
for d in x y; do answer $d; done
serve m0
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x3c 1M 64k' >"$T/read.out" 2>&1 || fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
stop m0
