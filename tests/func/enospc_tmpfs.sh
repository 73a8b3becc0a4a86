# A component file on a file system that fills up: the client is told
# ENOSPC ("No space left on device"), not EIO, so that it knows what to do.
. "$(dirname "$0")/lib.sh"
need qemu-io
[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
mkdir "$T/small"
mount -t tmpfs -o size=12M tmpfs "$T/small" 2>/dev/null || skip "cannot mount a tmpfs here"
trap 'rc=$?; umount -l "$T/small" 2>/dev/null; (exit $rc); cleanup' EXIT
truncate -s 32M "$T/small/a" "$T/small/b"
bm label -n m0 "$T/small/a" "$T/small/b"
serve m0
out=$(qemu-io -f raw "$(uri m0)" -c 'write -P 0x11 0 16M' 2>&1) && fail "16 MiB fitted in 12 MiB: $out"
echo "$out"
grep -q "No space left on device" <<<"$out" || fail "want ENOSPC, got: $out"
stop m0
