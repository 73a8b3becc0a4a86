# Block devices as components (loop devices), mixed with a file.
. "$(dirname "$0")/lib.sh"
need losetup
need nbdcopy
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
mkimg 32 a b c
la=$(losetup -f --show "$T/a" 2>/dev/null) || skip "no loop devices here"
lb=$(losetup -f --show "$T/b") || skip "no second loop device"
bm label m0 "$la" "$lb" "$T/c"
serve m0
wait_complete m0
head -c $((31 * MIB)) /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)"
nbdcopy "$(uri m0)" "$T/back"
cmp "$T/data" "$T/back" || fail "read back differs"
stop m0
cmp -n $((31 * MIB)) "$T/data" "$lb" || fail "loop device b differs"
cmp -n $((31 * MIB)) "$T/data" "$T/c" || fail "file c differs"
