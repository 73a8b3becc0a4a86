# A component that answers the reads at the start (label, lease, bitmap)
# and then never answers the start's label write is left out (DISCONNECTED,
# "cannot write its label at the start") after the io-timeout, the mirror
# serves the other, and the component is taken back and copied once it
# answers.  Before, the start failed ("cannot write labels") and nothing
# was served while one component hung.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
hangdisk w 32
W=$(disk_uri w)
bm label -n m0 "$T/a" "$W" >/dev/null
disk_kill w; rm -f "$T/w.disk.sock" "$T/w.disk.pid"
hangdisk w 32 "write:$(( 32 * MIB - 4096 ))"   # its label takes no write while hung
hang w
serve m0 --io-timeout 2
out=$(bm status m0) || true
has "DEGRADED" <<<"$out" || fail "not DEGRADED: $out"
has "$T/a (ACTIVE" <<<"$out" || fail "a not ACTIVE: $out"
has "w.disk.sock (DISCONNECTED.*cannot write its label at the start" <<<"$out" ||
  fail "w not DISCONNECTED with its reason: $out"
has "leaving out .*w.disk.sock: it did not take the start's label write" "$T/m0.log" ||
  fail "the log does not say why: $(cat "$T/m0.log")"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5e 3M 64k' >/dev/null || fail "write while w hangs"
answer w
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x5e 3M 64k' >"$T/read.out" 2>&1 || fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
stop m0
cmp -n $((64 * 1024)) -i $((3 * MIB)):$((3 * MIB)) "$T/a" "$T/w.img" || fail "w does not hold the write"
# a's label recorded w's departure: at the next start a is the source
serve m0
wait_complete m0
out=$(bm status m0) || true
has "COMPLETE" <<<"$out" || fail "not COMPLETE after the restart: $out"
stop m0
