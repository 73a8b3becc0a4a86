# One piece of storage named twice is refused: a file and a loop device
# over it, two loop devices over one file, one loop device through two
# device nodes; nothing is written.
. "$(dirname "$0")/lib.sh"
need losetup
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
mkimg 16 a b
l1=$(losetup -f --show "$T/a" 2>/dev/null) || skip "no loop devices here"
l2=$(losetup -f --show "$T/a") || skip "no second loop device"
before=$(cat "$T/a" "$T/b" | sha256sum)
expect_error "$T/a and $l1 are the same disk" bm label m0 "$T/a" "$l1"
expect_error "$l1 and $T/a are the same disk" bm label m0 "$T/b" "$l1" "$T/a"
expect_error "$l2 and $l1 are the same disk" bm label m0 "$l2" "$l1"
ln -s "$l1" "$T/l1.link"
expect_error "$T/l1.link and $l1 are the same disk" bm label m0 "$T/l1.link" "$l1"
mknod "$T/l1.node" b "$(stat -c '%t' "$l1" | xargs printf '%d')" \
  "$(stat -c '%T' "$l1" | xargs printf '%d')"
expect_error "$T/l1.node and $l1 are the same disk" bm label m0 "$T/l1.node" "$l1"
after=$(cat "$T/a" "$T/b" | sha256sum)
[ "$before" = "$after" ] || fail "a refused label changed a component"
# Two different files on loop devices are fine.
l3=$(losetup -f --show "$T/b") || skip "no third loop device"
bm label m0 "$l1" "$l3"
