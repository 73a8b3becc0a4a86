# A client's long WRITE_ZEROES (96 MiB: in pieces of 8 MiB) when one
# component, a slow one (each zeroing 150 ms), starts failing them after
# two pieces (nbdkit's error filter, switched on by a file) while the
# other, a fast file, has done them all: the pieces after the failed one
# are not sent, the failing component is FAILED with the reason, the
# client's request is acknowledged from the file, which reads zeros there.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 128 a
head -c $((127 * MIB)) /dev/urandom >"$T/data"
dd if="$T/data" of="$T/a" conv=notrunc status=none
zero_errdisk bad 150ms
nbdcopy "$T/data" "$(disk_uri bad)"
zero_long_client "$T/a" "$(disk_uri bad)"
zero_fails_after bad 2
wait "$client" || { cat "$T/q.out"; fail "the client's zeroing failed"; }
grep -qiE 'error|fail' "$T/q.out" && { cat "$T/q.out"; fail "client saw an error"; }
out=$(bm status m0) && fail "status exited 0 with a component that failed writes: $out"
has "bad.disk.sock (FAILED: write error" <<<"$out" || fail "not FAILED: $out"
# no piece after the failed one: the log's last zero request failed
n=$(zero_pieces bad)
[ "$n" -lt 12 ] || fail "$n zero pieces reached the failing component: it was sent all of them"
stop m0
cmp -n $((96 * MIB)) -i $((8 * MIB)):0 "$T/a" /dev/zero >/dev/null || fail "the file does not read zeros where the client zeroed"
cmp -n $((8 * MIB)) "$T/a" "$T/data" >/dev/null || fail "the file's data before the zeroed range changed"
echo "ok: the failing component got $n pieces, the write was acknowledged from the file"
