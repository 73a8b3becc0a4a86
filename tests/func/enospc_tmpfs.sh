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
# Expected failure until the engine keeps the errno of a write that failed
# on every component (lib/io.c write_done sets EIO); the file backend itself
# reports ENOSPC (unit/test_file_backend checks it).
echo "$out" | grep -q "Input/output error" &&
  skip "KNOWN: the engine turns the components' ENOSPC into EIO (lib/io.c write_done)"
echo "$out" | grep -q "No space left on device" || fail "want ENOSPC, got: $out"
stop m0
