# A grown NBD component whose old end does not answer when the start looks
# there for its label (one stuck sector where the label is) is neither
# taken as unlabelled nor waited for: the mirror starts without it after
# the io-timeout (ABSENT: "where it was when it was N bytes cannot be
# read"), and once that read is answered it is taken back at
# its old size and caught up.  Before this test the timeout was reviewed
# only.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
old_label=$((32 * MIB - 4096))
hangdisk r 32 "$old_label"
R="$(disk_uri r)"
bm label -n m0 "$T/a" "$R" >/dev/null
serve m0 --io-timeout 2
qemu-io -f raw "$(uri m0)" -c 'write -P 0x61 1M 64k' >/dev/null || fail "write"
stop m0
disk_kill r
for _ in $(seq 1 100); do [ -S "$T/r.disk.sock" ] || break; sleep 0.05; done
rm -f "$T/r.disk.sock" "$T/r.disk.pid"
# the export grows while the server is stopped; its old label's block
# does not answer
truncate -s 40M "$T/r.img"
hang r
hangdisk r 40 "$old_label"
start=$SECONDS
serve m0 --io-timeout 2
took=$((SECONDS - start))
echo "the start took ${took} s"
[ "$took" -le 15 ] || fail "the start waited ${took} s for the old end"
out=$(bm status m0) || true
echo "$out"
has -E "m0 +DEGRADED" <<<"$out" || fail "not DEGRADED without r: $out"
has -E "r.disk.sock \((ABSENT|DISCONNECTED)" <<<"$out" || fail "r not left out: $out"
has "where it was when it was 33554432 bytes cannot be read: Connection timed out" <<<"$out" ||
  fail "status does not say r's old end did not answer: $out"
has "has no blkmirror label at its end\$" <<<"$out" && fail "r taken for unlabelled: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x62 2M 64k' >/dev/null || fail "write without r"
answer r
wait_complete m0
has "r.disk.sock grew from 33554432 to 41943040 bytes" "$T/m0.log" ||
  fail "the log does not say r came back grown: $(tail -5 "$T/m0.log")"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x62 2M 64k' >/dev/null || fail "the write made without r is gone"
stop m0
cmp -n $((30 * MIB)) "$T/a" "$T/r.img" || fail "r was not caught up"
