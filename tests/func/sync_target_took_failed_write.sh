# A client write that every ACTIVE component fails (the last one stays in
# service; the client gets EIO) but that reached the SYNCHRONIZING target
# behind its copy leaves the target different from its source there: the
# copy goes over it again before the target is ACTIVE (before: COMPLETE
# with copies that differ, reads alternating between old and new data),
# and only the range it took is copied again, not everything from there
# to the end (a source that keeps failing writes a client keeps retrying
# would keep the copy going).
. "$(dirname "$0")/lib.sh"
need qemu-io
truncate -s 64M "$T/a.img" "$T/b.img"
head -c 16M /dev/urandom | dd of="$T/a.img" conv=notrunc status=none
nbdkit -U "$T/a.disk.sock" -P "$T/a.disk.pid" --filter=error file "$T/a.img" \
  error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file="$T/a.err" \
  >>"$T/a.disk.log" 2>&1 || fail "nbdkit a"
# b takes 4 MB/s (32 Mbit/s) from its first byte: the copy of 16 MiB
# takes ~4 s, the write falls inside it
nbdkit -U "$T/b.disk.sock" -P "$T/b.disk.pid" --filter=rate file "$T/b.img" rate=32M \
  >>"$T/b.disk.log" 2>&1 || fail "nbdkit b"
for d in a b; do
  for _ in $(seq 1 100); do [ -s "$T/$d.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$d.disk.pid")")
done
bm label m0 "$(disk_uri a)" "$(disk_uri b)"   # b is copied from a
serve m0 --io-timeout 5
u=$(uri m0)
# once the copy is past offset 0
wait_status m0 "SYNCHRONIZING, \([2-9]\|[1-7][0-9]\)%" 10
# the mirror marked dirty and offset 0's bit set first (both are label
# and bitmap writes a would fail too)
qemu-io -f raw "$u" -c 'write -P 0x11 0 4k' >/dev/null || fail "first write"
touch "$T/a.err"
out=$(qemu-io -f raw "$u" -c 'write -P 0x55 0 64k' 2>&1) || true
grep -q "Input/output error" <<<"$out" || fail "the write did not fail: $out $(cat "$T/m0.log")"
rm -f "$T/a.err"
grep -q "took a write at offset 0 that every ACTIVE component failed" "$T/m0.log" && \
  fail "copied again before the copy ended?"
wait_complete m0
grep -q "took a write at offset 0 that every ACTIVE component failed: copied again from offset 0 to 1048576$" "$T/m0.log" ||
  fail "no second pass over the first MiB only: $(cat "$T/m0.log")"
again=$(sed -n 's/.* synchronized: \([0-9]*\) bytes copied.*/\1/p' "$T/m0.log" | tail -1)
[ -n "$again" ] && [ "$again" -le "$MIB" ] ||
  fail "the second pass copied ${again:-?} bytes, want at most $MIB: $(cat "$T/m0.log")"
out=$(bm check m0) || fail "check after the copy: $out"
stop m0
cmp -n $((62 * MIB)) "$T/a.img" "$T/b.img" || fail "the copies differ"
echo ok
