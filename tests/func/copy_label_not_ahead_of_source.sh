# A component being copied never records more events than the source's
# label holds (meta.c: the full labels are written first, and a copy's label
# carries no more than one of them landed).  Here the source a refuses the
# stop's clean mark while b is being copied: stop says so, and the next
# start takes a as the source again (it holds every acknowledged write)
# instead of refusing it as an older copy put back (assembly_decide.c rule
# 4).  Before the cap, b's label counted the clean mark a lacked, and the
# next serve was refused.
. "$(dirname "$0")/lib.sh"
need qemu-io
faildisk a 64
mkimg 64 b
A=$(disk_uri a)
bm label -n m0 "$A" "$T/b" >/dev/null
serve m0
bm configure --sync-max 4M m0                  # b stays SYNCHRONIZING
# (the eval disk reports no holes: all 63M are copied at 4M/s)
bm rebuild m0 "$T/b" >/dev/null || fail "rebuild refused: $(bm status m0)"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 1M 64k' >/dev/null
fail_writes a $((64 * MIB - 4096))             # a's label
rc=0; out=$("$BLKMIRROR" stop m0 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "stop exited $rc (want 1): $out"
has "a label could not be marked clean" <<<"$out" || fail "stop said: $out"
bm dump "$T/b" | has "Flags: .*SYNCHRONIZING" || fail "b is not being copied: $(bm dump "$T/b")"
ea=$(bm dump "$A" | awk '/^ *Events:/ {print $2}')
eb=$(bm dump "$T/b" | awk '/^ *Events:/ {print $2}')
[ -n "$ea" ] && [ -n "$eb" ] || fail "no events in the dumps: $(bm dump "$A")"
[ "$eb" -le "$ea" ] || fail "b's label counts $eb events, the source's only $ea"
take_writes a
serve m0
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x5a 1M 64k' >"$T/read.out" 2>&1 || fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
stop m0
