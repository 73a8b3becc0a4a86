# insert --wait exits 1, with the reason status gives, when the component
# fails during its copy (an NBD disk whose writes start failing); the
# mirror keeps serving from the others.
. "$(dirname "$0")/lib.sh"
mkimg 64 a b
head -c 63M /dev/urandom | dd of="$T/a" conv=notrunc status=none # holes are not copied
cp "$T/a" "$T/b"
disk d0 64M --filter=error --filter=delay error-pwrite=EIO \
  error-pwrite-rate=100% error-pwrite-file="$T/fail" wdelay=20ms
bm label -n m0 "$T/a" "$T/b"
serve m0
# the copy (63 MiB) takes ~4 s, so the writes fail in its middle and not
# at its end's label write (seen under ASan on a busy machine: the copy
# was at 80% when the failures began)
bm configure --sync-max 16M m0
bm insert --wait m0 "$(disk_uri d0)" >"$T/wait.out" 2>&1 &
waiter=$!
for _ in $(seq 1 200); do
  out=$(bm status m0) || true
  grep -q "d0.disk.sock (SYNCHRONIZING" <<<"$out" && break
  sleep 0.05
done
grep -q "d0.disk.sock (SYNCHRONIZING" <<<"$out" || fail "d0 not SYNCHRONIZING: $out"
touch "$T/fail"
rc=0
wait $waiter || rc=$?
cat "$T/wait.out"
[ $rc -eq 1 ] || fail "insert --wait exited $rc, want 1"
grep -q "^blkmirror: .*d0.disk.sock of m0 is FAILED: write error during sync: Input/output error$" "$T/wait.out" || fail "insert --wait did not say why"
out=$(bm status m0) || true
[ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] || fail "the mirror lost a component: $out"
stop m0
