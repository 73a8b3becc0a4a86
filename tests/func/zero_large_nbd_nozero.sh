# One 128 MiB WRITE_ZEROES onto a mirror whose NBD component cannot zero
# (nbdkit's nozero filter): the backend writes zeros in pieces the export
# accepts, so the component stays ACTIVE and both copies read zeros.
# Regression: it allocated 128 MiB and sent one write that libnbd refuses
# (over 64 MiB), which failed a healthy component out.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdcopy
disk d0 160M --filter=nozero
disk d1 160M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x5a 0 130M' >/dev/null || fail "fill"
"$TEST_TOOLS/nbd_zero" "$u" zero 0 $((128 * MIB)) || fail "128 MiB WRITE_ZEROES failed"
out=$(bm status m0) || fail "not COMPLETE after the zeroing: $out"
grep -q FAILED <<<"$out" && fail "a component failed: $out"
head -c $((128 * MIB)) /dev/zero >"$T/zeros"
for src in "$u" "$(disk_uri d0)" "$(disk_uri d1)"; do
  nbdcopy "$src" "$T/back"
  cmp -n $((128 * MIB)) "$T/back" "$T/zeros" || fail "$src does not read zeros"
  # the zeroing stopped where it was told to
  after=$(qemu-io -f raw "$src" -c "read -P 0x5a $((128 * MIB)) 2M")
  grep -q 'read 2097152' <<<"$after" || fail "$src: data after the zeroed range changed: $after"
done
stop m0
