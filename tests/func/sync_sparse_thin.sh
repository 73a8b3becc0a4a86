# Thin components stay thin: three sparse 256 MiB files labelled together
# (a little data on the first) end with copies that hold only that data and
# the metadata (before: fully allocated), identical to the source.  And a
# blank pair on a tmpfs smaller than one of them synchronizes instead of
# filling it and failing the target.
. "$(dirname "$0")/lib.sh"
mkimg 256 a b c
dd if=/dev/urandom of="$T/a" bs=1M count=2 seek=100 conv=notrunc status=none
bm label m0 "$T/a" "$T/b" "$T/c"
serve m0
wait_complete m0
stop m0
for f in a b c; do
  kib=$(du -k "$T/$f" | cut -f1)
  echo "$f: $kib KiB on disk"
  # 2 MiB of data + label and lease; a full copy would be 262144 KiB
  [ "$kib" -le 8192 ] || fail "$f takes $kib KiB on disk after the sync"
done
same_data "$T/a" "$T/b"
same_data "$T/a" "$T/c"

# A blank pair on a 64 MiB tmpfs: 256 MiB each, nothing written.
mkdir "$T/small"
mount -t tmpfs -o size=64m tmpfs "$T/small" 2>/dev/null || skip "cannot mount a tmpfs"
# (cleanup takes the exit status from $?: keep the test's)
trap 'rc_=$?; umount -l "$T/small" 2>/dev/null || true; set +e; (exit $rc_); cleanup' EXIT
truncate -s 256M "$T/small/x" "$T/small/y"
bm label m1 "$T/small/x" "$T/small/y"
serve m1
wait_complete m1
out=$(bm status m1) || true
grep -q "y (ACTIVE)" <<<"$out" || fail "the target did not become ACTIVE: $out"
stop m1
used=$(df -k --output=used "$T/small" | tail -1)
[ "$used" -le 16384 ] || fail "the pair uses $used KiB of the tmpfs"
same_data "$T/small/x" "$T/small/y"
umount "$T/small"
