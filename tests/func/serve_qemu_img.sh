# qemu-img convert onto the mirror, then compare through NBD and on disk.
. "$(dirname "$0")/lib.sh"
need qemu-img
mkimg 20 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
head -c $((19 * MIB)) /dev/urandom >"$T/src.raw"
qemu-img convert -n -f raw -O raw "$T/src.raw" "$(uri m0)"
qemu-img compare -f raw -F raw "$T/src.raw" "$(uri m0)" >/dev/null || fail "qemu-img compare differs"
stop m0
cmp -n $((19 * MIB)) "$T/src.raw" "$T/b" || fail "component b differs"
