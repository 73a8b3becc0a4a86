# A file system filling the first component would lose its last MiB to the
# label and its reserved area: label refuses, saying by how much, even
# with -f; a file system that fits is labeled with -f.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
mkimg 64 full other big
mkfs.ext4 -q -F "$T/full"
before=$(cat "$T/full" "$T/other" | sha256sum)
expect_error "$T/full: its ext4 file system \(67108864 bytes\) is 1048576 bytes larger than the mirror would be \(66060288 bytes" \
  bm label m0 "$T/full" "$T/other"
expect_error "1048576 bytes larger" bm label -f m0 "$T/full" "$T/other"
# The smallest component sets the mirror's size.
truncate -s 128M "$T/big"
mkfs.ext4 -q -F "$T/big" 64M
expect_error "$T/big: its ext4 file system \(67108864 bytes\) is 1048576 bytes larger" \
  bm label -f m0 "$T/big" "$T/other"
after=$(cat "$T/full" "$T/other" | sha256sum)
[ "$before" = "$after" ] || fail "a refused label changed a component"
# Shrunk to fit, it is labeled (with -f: it still holds ext4).  resize2fs
# also shrinks the image file, so it is grown back to 64M.
e2fsck -fy "$T/full" >/dev/null 2>&1 || true
resize2fs -f "$T/full" 60M >/dev/null 2>&1 || fail "resize2fs"
truncate -s 64M "$T/full"
bm label -f m0 "$T/full" "$T/other"
e2fsck -fn "$T/full" >/dev/null 2>&1 || fail "the labeled file system is damaged"
