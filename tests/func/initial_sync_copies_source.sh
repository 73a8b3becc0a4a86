# The first component is the sync source: its data reaches the others while
# the mirror serves, reads during the sync return the source's data.
. "$(dirname "$0")/lib.sh"
need nbdcopy
mkimg 128 a b
head -c $((127 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
bm label m0 "$T/a" "$T/b"
serve m0
nbdcopy "$(uri m0)" "$T/read-during-sync"
cmp "$T/read-during-sync" <(head -c $((127 * MIB)) "$T/a") || fail "read during sync differs from source"
wait_complete m0
stop m0
same_data "$T/a" "$T/b"
bm dump "$T/b" | has "Flags: NONE" || fail "b still flagged after sync"
