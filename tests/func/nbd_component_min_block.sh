# NBD components that take only 4 KiB-aligned requests (their server
# advertises a minimum block size of 4096 and answers EINVAL to anything
# else): the mirror tells its clients that minimum, so qemu aligns its
# 512-byte writes itself (read-modify-write), and a client that ignores it
# gets EINVAL from the mirror, with nothing sent to the components.
# Before, the server advertised "any alignment", a 512-byte write reached
# the components, and they were failed out for refusing it.  A component
# with such a minimum is not inserted into a mirror whose clients were
# told that any alignment works.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdsh
need nbdinfo
disk p0 64M; disk p1 64M
for d in d0 d1 d2 d3; do
  disk $d 64M --filter=blocksize-policy blocksize-minimum=4096 blocksize-error-policy=error
done
# the disks really refuse 512-byte requests (libnbd's strict mode off: it
# would refuse them itself)
out=$(nbdsh -u "$(disk_uri d0)" -c 'h.set_strict_mode(0)' -c 'h.pwrite(b"x" * 512, 512)' 2>&1) &&
  fail "a 512-byte write to d0 itself did not fail"
grep -q "Invalid argument" <<<"$out" || fail "a 512-byte write to d0 failed otherwise: $out"

bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
info=$(nbdinfo "$(uri m0)") || fail "nbdinfo failed"
grep -q "block_size_minimum: 4096" <<<"$info" ||
  fail "the mirror does not advertise its components' minimum: $(grep block_size <<<"$info")"
out=$(qemu-io -f raw "$(uri m0)" -c "write -P 0x11 512 512" -c "read -P 0x11 512 512" \
  -c "read -P 0 0 512" -c "read -P 0 1024 3072" 2>&1) || fail "qemu-io failed: $out"
grep -q "failed" <<<"$out" && fail "qemu-io: $out"
# a client that ignores the minimum: EINVAL from the mirror itself
out=$(nbdsh -u "$(uri m0)" -c 'h.set_strict_mode(0)' -c 'h.pwrite(b"y" * 512, 8192)' 2>&1) &&
  fail "an unaligned write was accepted"
grep -q "Invalid argument" <<<"$out" || fail "an unaligned write failed otherwise: $out"
out=$(nbdsh -u "$(uri m0)" -c 'h.set_strict_mode(0)' -c 'h.pread(4096, 512)' 2>&1) &&
  fail "an unaligned read was accepted"
grep -q "Invalid argument" <<<"$out" || fail "an unaligned read failed otherwise: $out"
# the connection goes on after the refusal, and aligned requests work
out=$(nbdsh -u "$(uri m0)" -c 'h.set_strict_mode(0)' \
  -c 'try:
    h.pwrite(b"y" * 512, 8192)
except nbd.Error:
    pass' -c 'h.pwrite(b"z" * 4096, 8192)' -c 'assert h.pread(4096, 8192) == b"z" * 4096' 2>&1) ||
  fail "the connection did not go on after a refused request: $out"
st=$(bm status m0) || fail "status exits non-zero: $st"
echo "$st"
[ "$(grep -c '(ACTIVE)' <<<"$st")" = 2 ] || fail "a component left service: $st"
errs=$(bm stat --prometheus m0 | grep '_errors_total{' | awk '{s += $NF} END {print s + 0}')
[ "$errs" = 0 ] || fail "the components counted $errs errors"
stop m0

# a file and a 4 KiB export: the 4 KiB stays what clients are told while
# the export is out of service, so a client that connected meanwhile does
# not send it 512-byte writes once it is back
mkimg 64 a
bm label -n m2 "$T/a" "$(disk_uri d3)"
serve m2
bm deactivate m2 "$(disk_uri d3)" || fail "deactivate failed"
info=$(nbdinfo "$(uri m2)") || fail "nbdinfo failed"
grep -q "block_size_minimum: 4096" <<<"$info" ||
  fail "the minimum dropped while the 4 KiB export was out of service: $(grep block_size <<<"$info")"
bm activate --wait m2 "$(disk_uri d3)" >/dev/null || fail "activate failed"
out=$(qemu-io -f raw "$(uri m2)" -c "write -P 0x22 512 512" -c "read -P 0x22 512 512" 2>&1) ||
  fail "qemu-io on m2 failed: $out"
grep -q "failed" <<<"$out" && fail "qemu-io on m2: $out"
st=$(bm status m2) || fail "m2's status exits non-zero: $st"
[ "$(grep -c '(ACTIVE)' <<<"$st")" = 2 ] || fail "a component of m2 left service: $st"
stop m2

# an export whose minimum is larger than the mirror's 4 KiB metadata blocks
disk big 64M --filter=blocksize-policy blocksize-minimum=8192 blocksize-preferred=8192 blocksize-error-policy=error
expect_error "takes only requests aligned to 8192 bytes .*must take 4096-byte blocks" \
  bm label -n m3 "$(disk_uri big)" "$(disk_uri p0)"

# insert into a mirror without a minimum: refused, nothing written
bm label -n m1 "$(disk_uri p0)" "$(disk_uri p1)"
serve m1
before=$(nbdsh -u "$(disk_uri d2)" -c 'import hashlib' -c 'print(hashlib.sha256(h.pread(65536, 0) + h.pread(1048576, 63 * 1048576)).hexdigest())')
expect_error "takes only requests aligned to 4096 bytes \(its minimum block size\)" bm insert m1 "$(disk_uri d2)"
after=$(nbdsh -u "$(disk_uri d2)" -c 'import hashlib' -c 'print(hashlib.sha256(h.pread(65536, 0) + h.pread(1048576, 63 * 1048576)).hexdigest())')
[ "$before" = "$after" ] || fail "the refused insert wrote to d2"
st=$(bm status m1) || fail "m1's status exits non-zero: $st"
[ "$(grep -c 'nbd+unix' <<<"$st")" = 2 ] || fail "m1 changed: $st"
stop m1
echo ok
