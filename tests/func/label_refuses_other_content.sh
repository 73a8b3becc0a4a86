# label refuses a component carrying another mirror's label (naming that
# mirror), a partition table (sfdisk), swap, an md RAID superblock at the
# end, and writes nothing.
. "$(dirname "$0")/lib.sh"
need sfdisk
mkimg 16 a b c pt md
bm label other "$T/a" "$T/b" -n
sfdisk -q "$T/pt" <<<',,L' >/dev/null
before=$(cat "$T/a" "$T/b" "$T/c" "$T/pt" | sha256sum)
expect_error "$T/a: already a component of mirror 'other'" bm label m0 "$T/c" "$T/a"
expect_error "$T/pt: holds a partition table \(dos\)" bm label m0 "$T/c" "$T/pt"
expect_error "$T/pt: holds a partition table \(dos\)" bm label m0 "$T/pt" "$T/c"
after=$(cat "$T/a" "$T/b" "$T/c" "$T/pt" | sha256sum)
[ "$before" = "$after" ] || fail "a refused label changed a component"
bm dump "$T/a" | has "Name: other" || fail "the other mirror's label is gone"
# Swap space (mkswap).
mkswap -q "$T/md" >/dev/null
expect_error "$T/md: holds a swap signature" bm label m0 "$T/c" "$T/md"
# An md 0.90 superblock (magic a92b4efc, version 0.90) 64 KiB before the
# last 64 KiB boundary: found by reading the component's last MiB.
wipefs -qa "$T/md"
printf '\xfc\x4e\x2b\xa9\0\0\0\0\x5a\0\0\0' |
  dd of="$T/md" bs=1 seek=$((16 * MIB - 65536)) conv=notrunc status=none
expect_error "$T/md: holds an md RAID member \(linux_raid_member\)" bm label m0 "$T/c" "$T/md"
# -f takes the component from the other mirror.
bm label -f m0 "$T/c" "$T/a"
bm dump "$T/a" | has "Name: m0" || fail "label -f did not relabel"
grep -qx "$T/a" "$T/state/m0.components" || fail "m0 does not list a"
# (other keeps listing a, as gmirror keeps a missing component, until
# 'blkmirror forget other'; its label is m0's now)
out=$(bm dump "$T/a")
! grep -q "Name: other" <<<"$out" || fail "a still carries other's label"
