# label refuses a component holding a file system (mkfs.ext4 on a file),
# first or second, with one line naming ext4 and the component, and writes
# nothing; -f goes ahead.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
mkimg 64 blank data
mkfs.ext4 -q -F "$T/data" 32M
before=$(cat "$T/blank" "$T/data" | sha256sum)
expect_error "$T/data: holds a file system \(ext4\), which the initial sync would overwrite; label -f" \
  bm label m0 "$T/blank" "$T/data"
expect_error "$T/data: holds a file system \(ext4\), which would become the mirror's data" \
  bm label m0 "$T/data" "$T/blank"
expect_error "holds a file system \(ext4\)" bm label -n m0 "$T/blank" "$T/data"
after=$(cat "$T/blank" "$T/data" | sha256sum)
[ "$before" = "$after" ] || fail "a refused label changed a component"
[ ! -e "$T/state/m0.components" ] || fail "a refused label recorded the mirror"
# -f overrides: the ext4 component is the source and keeps its file system.
bm label -f m0 "$T/data" "$T/blank"
bm dump "$T/blank" | has "Name: m0" || fail "label -f wrote no label"
bm clear "$T/data" "$T/blank"
bm label m1 "$T/blank" "$T/data" -f
bm dump "$T/data" | has "Name: m1" || fail "label NAME ... -f wrote no label"
