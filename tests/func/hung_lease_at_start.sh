# A component that answers its label at the start and then not the read
# of its lease is judged by its label before it is left out: when another
# component holds the same data the mirror starts without it (ABSENT, it
# rejoins when it answers); when it alone holds the newest data the start
# is refused, nothing changed.  Before, it was left out unjudged and never
# retried: the mirror started from older data, and it stayed ABSENT.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
lease=$((32 * MIB - 8192))
hangdisk h 32 "$lease"          # holds requests to its lease while hung
H=$(disk_uri h)
bm label -n m0 "$T/a" "$H" >/dev/null
hang h
serve m0 --io-timeout 2
out=$(bm status m0) || true
has "h.disk.sock (ABSENT" <<<"$out" || fail "h not ABSENT: $out"
has "leaving out .*h.disk.sock: .*lease" "$T/m0.log" || fail "the log does not say why: $(cat "$T/m0.log")"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5e 3M 64k' >/dev/null || fail "write while h hangs"
answer h
wait_complete m0
# h alone holds the newest data: a deactivated, a write, a stopped
bm deactivate m0 "$T/a" >/dev/null || fail "deactivate a"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x6f 4M 64k' >/dev/null || fail "write with a out"
stop m0
a0=$(sha256sum <"$T/a")
hang h
rc=0; out=$(timeout 60 "$BLKMIRROR" serve m0 --socket "$T/m0.sock" --io-timeout 2 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "serve exited $rc: $out"
has "mirror 'm0': .*h.disk.sock holds its newest data but .*lease.*; nothing was changed: start it again once it answers" <<<"$out" ||
  fail "serve said: $out"
[ "$(sha256sum <"$T/a")" = "$a0" ] || fail "the refused start changed a"
answer h
serve m0 --io-timeout 2

qemu-io -f raw "$(uri m0)" -c 'read -P 0x6f 4M 64k' >"$T/read.out" 2>&1 || fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "the newest write is lost: $(cat "$T/read.out")"
stop m0
