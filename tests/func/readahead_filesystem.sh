#!/usr/bin/env bash
# A file read through ext4 on the attached mirror (nbdfuse + a loop device
# with direct I/O) is served by the stream read-ahead.  The kernel's reads
# arrive several at a time (1 MiB and 256 KiB) and out of order: a read
# often lands a few reads' lengths past the stream's front and the gap is
# filled a moment later.  Before, such reads fitted no stream (only a
# read at the front did), the file read at 1.3-1.5x one disk on two, and
# the read-ahead served 38-51 MiB of this 64 MiB file; now 60-64; now they belong to the stream.
# Asserted on the read-ahead's own count of bytes it served (BM_RA_DEBUG),
# and the file's bytes.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "attach needs root (loop devices)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE)"
need nbdfuse; need losetup; need mkfs.ext4
export BM_RA_DEBUG=1
mkimg 160 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
bm configure -b stream m0
dev=$(bm attach m0) || fail "attach failed"
mkfs.ext4 -q -F "$dev"
mkdir "$T/mnt"
mount "$dev" "$T/mnt"
head -c $((64 * MIB)) /dev/urandom >"$T/file"
cp "$T/file" "$T/mnt/big"
umount "$T/mnt"            # (nothing of the file stays in the page cache)
mount "$dev" "$T/mnt"
dd if="$T/mnt/big" of="$T/read" bs=64k 2>/dev/null || fail "reading the file failed"
umount "$T/mnt"
cmp -s "$T/file" "$T/read" || fail "the file read back differs from what was written"
bm detach m0 || fail "detach failed"
stop m0
line=$(ra_line m0 '[0-9]* reads served')
mib=$(ra_count "$line" "MiB,")
[ -n "$mib" ] || fail "no served bytes in the summary"
mib=${mib%.*}
[ "$mib" -ge 56 ] || fail "the read-ahead served $mib MiB of the 64 MiB file (want >= 56)"
