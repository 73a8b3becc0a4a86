# A block device the kernel will not let us claim is refused by every verb
# that writes, -f or not, saying who holds it: a mounted one (label -f,
# insert -f, serve), and a partition of a disk that a running mirror
# holds (before: taken and overwritten; the partition's mirror then wrote
# under the running one).  Nothing on the devices changes.
. "$(dirname "$0")/lib.sh"
need losetup
need mkfs.ext4
need sfdisk
need partx
[ "$(id -u)" -eq 0 ] || skip "loop devices and mounts need root"
mkimg 64 a b c d
# a mounted loop device
mkfs.ext4 -q -F "$T/d" 32M >/dev/null 2>&1 || skip "mkfs.ext4 failed"
ld=$(losetup -f --show "$T/d" 2>/dev/null) || skip "no loop devices here"
mkdir "$T/mnt"
mount "$ld" "$T/mnt" 2>/dev/null || skip "cannot mount ext4 here"
# (the file system writes its own blocks; the label would go in the last MiB)
tail_sum() { tail -c $MIB "$1" | sha256sum; }
before=$(tail_sum "$ld")
expect_error "$ld: the device is mounted on $T/mnt; unmount it first" bm label -f m1 "$T/a" "$ld"
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
wait_complete m0
expect_error "$ld: the device is mounted on $T/mnt; unmount it first" bm insert -f m0 "$ld"
stop m0
umount "$T/mnt"
[ "$(tail_sum "$ld")" = "$before" ] || fail "a refused verb changed the mounted device"
# serve of a mirror whose component is mounted
bm label -f -n m2 "$ld" "$T/c" >/dev/null
mount "$ld" "$T/mnt" 2>/dev/null || skip "cannot mount the component"
expect_error "m2.*$ld: the device is mounted on $T/mnt" bm serve m2 --socket "$T/m2.sock"
umount "$T/mnt"
# a partition of a disk a running mirror holds
truncate -s 128M "$T/disk"
printf 'label: gpt\n,60M\n' | sfdisk -q "$T/disk" >/dev/null 2>&1 || skip "sfdisk failed"
lp=$(losetup -f --show -P "$T/disk") || skip "no loop device for the disk"
[ -b "${lp}p1" ] || partx -a "$lp" 2>/dev/null || true  # (-P alone may not)
for _ in $(seq 1 50); do [ -b "${lp}p1" ] && break; sleep 0.1; done
[ -b "${lp}p1" ] || skip "no partition device ${lp}p1"
bm label -f -n m3 "$lp" "$T/b" >/dev/null
serve m3
wait_complete m3
expect_error "${lp}p1: the device is in use" bm label m4 "$T/c" "${lp}p1"
stop m3
