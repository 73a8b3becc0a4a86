# After a crash (every label DIRTY, the same history), a component that
# answers its label and then not its lease is left out and the mirror
# starts from the other, which holds every acknowledged write as well; it
# rejoins when it answers.  (The review of the first version: the start
# was refused, as if the mute one alone held the newest data.)
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
hangdisk h 32 $((32 * MIB - 8192))   # holds requests to its lease while hung
H=$(disk_uri h)
bm label -n m0 "$T/a" "$H" >/dev/null
serve m0 --io-timeout 2
qemu-io -f raw "$(uri m0)" -c 'write -P 0x7a 5M 64k' >/dev/null || fail "write"
kill -9 "$(server_pid m0)"
wait "$(server_pid m0)" 2>/dev/null || true
bm dump "$T/a" | has "DIRTY" || fail "a is not DIRTY after the crash: $(bm dump "$T/a")"
hang h
serve m0 --io-timeout 2
out=$(bm status m0) || true
has "h.disk.sock (ABSENT" <<<"$out" || fail "h not ABSENT: $out"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x7a 5M 64k' >"$T/read.out" 2>&1 || fail "read: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "the acknowledged write is lost: $(cat "$T/read.out")"
answer h
wait_complete m0
stop m0
cmp -n $((64 * 1024)) -i $((5 * MIB)):$((5 * MIB)) "$T/a" "$T/h.img" || fail "h does not hold the write"
