# TRIM on a mirror of two block devices (loop devices) leaves both reading
# zeros over the trimmed range, so the copies never differ afterwards
# (RELIABILITY 30): a discard that each disk may read back differently
# would break the mirror.
. "$(dirname "$0")/lib.sh"
need losetup
need nbdcopy
need qemu-io
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
mkimg 32 a b
la=$(losetup -f --show "$T/a" 2>/dev/null) || skip "no loop devices here"
lb=$(losetup -f --show "$T/b") || skip "no second loop device"
bm label -n m0 "$la" "$lb"
serve m0
head -c $((16 * MIB)) /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)"
# aligned, and one with edges that are not whole sectors
qemu-io -f raw "$(uri m0)" -c 'discard 1M 2M' -c 'discard 8389120 70000' >/dev/null
qemu-io -f raw -r "$(uri m0)" -c 'read -P 0 1M 2M' -c 'read -P 0 8389120 70000' |
  grep -c "^read" | has -x 2 || fail "the mirror does not read zeros where it was trimmed"
stop m0
for d in "$la" "$lb"; do
  cmp -n $((2 * MIB)) -i $((1 * MIB)):0 "$d" /dev/zero || fail "$d: trimmed range is not zeros"
  cmp -n 70000 -i 8389120:0 "$d" /dev/zero || fail "$d: unaligned trimmed range is not zeros"
  cmp -n $((MIB)) "$d" "$T/data" || fail "$d: data before the trim changed"
  cmp -n 512 -i 8388608:8388608 "$d" "$T/data" || fail "$d: the sector before the unaligned trim changed"
  cmp -n 4096 -i 8459120:8459120 "$d" "$T/data" || fail "$d: the bytes after the unaligned trim changed"
done
cmp -n $((31 * MIB)) "$la" "$lb" || fail "the two devices differ after TRIM"
