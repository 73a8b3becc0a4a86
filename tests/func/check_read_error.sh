# A component that answers reads with an error during a check is handled
# as the data path handles a read error: the chunk is rewritten from a good
# copy (recover.c), which here fails again and fails the component.  check
# names it, goes on comparing the others (a difference further on is
# reported) and exits 1: the comparison is incomplete.
. "$(dirname "$0")/lib.sh"
mkimg 65 a b
disk e 65M --filter=error error-pread=EIO error-pread-rate=100% error-pread-file="$T/err"
bm label -n m0 "$T/a" "$T/b" "$(disk_uri e)"
serve m0
printf 'X' | dd of="$T/b" bs=1 seek=$((10 * MIB)) conv=notrunc status=none
touch "$T/err"
rc=0; out=$(timeout 60 "$BLKMIRROR" check m0 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "check exited $rc with a component failing reads, want 1: $out"
grep -q "e.disk.sock could not read offset 0: Input/output error; the chunk is rewritten from a good copy" <<<"$out" ||
  fail "check did not name the failing component: $out"
grep -q "m0: offset $((10 * MIB)) length 4096: $T/b differs from $T/a" <<<"$out" ||
  fail "check did not go on with the others: $out"
grep -q "check of 'm0' is incomplete" <<<"$out" || fail "check said: $out"
for _ in $(seq 1 100); do
  st=$(bm status m0) || true
  grep -q "e.disk.sock (FAILED: read error" <<<"$st" && break
  sleep 0.1
done
grep -q "e.disk.sock (FAILED: read error" <<<"$st" || fail "the rewrite did not happen: $st"
stop m0
