# Scenario 27: a flush that fails on the way to "clean" keeps the mirror
# DIRTY on disk (the next start resynchronizes); the component whose flush
# failed is failed out while another can serve.
. "$(dirname "$0")/lib.sh"
need qemu-io
for d in x y; do
  disk $d 32M --filter=error error-flush=EIO error-flush-rate=100% \
    error-flush-file="$T/fail"
done
bm label -n m0 "$(disk_uri x)" "$(disk_uri y)"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x44 0 64k' >/dev/null
touch "$T/fail"
# idle clean (2 s) meets the failing flushes: one component is failed out,
# the last stays DIRTY
for _ in $(seq 1 100); do bm status m0 | grep -q FAILED && break; sleep 0.1; done
bm status m0 | grep -q "FAILED: flush error" || fail "no component failed: $(bm status m0)"
stop m0
grep -q "a flush failed; leaving the mirror marked dirty" "$T/m0.log" ||
  { cat "$T/m0.log"; fail "stop did not keep the mirror dirty"; }
rm "$T/fail"
serve m0
grep -q "was not stopped cleanly" "$T/m0.log" || fail "restart did not see the dirty mirror"
wait_complete m0
stop m0
