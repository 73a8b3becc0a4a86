# Scenarios 5 and 27: a flush or label write that fails on the way to
# "clean" keeps the mirror DIRTY on disk (the next start resynchronizes);
# the component that failed is failed out while another can serve, and
# the last one stays in service.
. "$(dirname "$0")/lib.sh"
need qemu-io
for d in x y; do
  disk $d 32M --filter=error error=EIO error-rate=100% error-file="$T/fail"
done
bm label -n m0 "$(disk_uri x)" "$(disk_uri y)"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x44 0 64k' >/dev/null
touch "$T/fail"
# (error filter on every request: flushes fail, and so does everything
# else, on both components.)  Idle clean (2 s) meets the failing flushes:
# one component is failed out, the last stays DIRTY
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q FAILED <<<"$out" && break
  sleep 0.1
done
grep -qE "FAILED: (flush error|cannot write its label)" <<<"$out" ||
  fail "no component failed: $out"
grep -q "(ACTIVE)" <<<"$out" || fail "the last component was failed out: $out"
bm stop m0 >/dev/null || true
wait "$(server_pid m0)" || true
rm "$T/fail"
serve m0
grep -q "was not stopped cleanly" "$T/m0.log" || fail "restart did not see the dirty mirror"
wait_complete m0
stop m0
