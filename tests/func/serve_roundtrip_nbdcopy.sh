# Data written through NBD by nbdcopy reads back, and every component holds it.
. "$(dirname "$0")/lib.sh"
need nbdcopy
mkimg 40 a b c
bm label m0 "$T/a" "$T/b" "$T/c"
serve m0
wait_complete m0
size=$(nbdinfo --size "$(uri m0)")
[ "$size" -eq $((39 * MIB)) ] || fail "export size $size, want $((39 * MIB))"
head -c "$size" /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)"
nbdcopy "$(uri m0)" "$T/back"
cmp "$T/data" "$T/back" || fail "read back differs"
stop m0
for f in a b c; do
  cmp -n "$size" "$T/data" "$T/$f" || fail "component $f does not hold the data"
done
