# The newest generation wins at assembly whichever component is listed
# first: a stale first component is copied over, never used as the source.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
mv "$T/a" "$T/a.away"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x66 0 2M' >/dev/null
stop m0
mv "$T/a.away" "$T/a"    # a (listed first) is now stale
serve m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x66 0 2M' | has "read 2097152" || fail "stale data served"
wait_complete m0
stop m0
same_data "$T/a" "$T/b"
