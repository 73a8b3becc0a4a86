# Reads from a component that returns EIO are served from the other copy;
# the failing component is taken out; the last ACTIVE component is never
# failed out, even when its reads fail too (the client gets EIO instead).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 b
disk bad 32M --filter=error error-pread=EIO error-pread-rate=100% error-pread-file="$T/bad.fail"
bm label -n -b prefer m0 "$(disk_uri bad)" "$T/b"   # prefer: the first one reads
serve m0
u=$(uri m0)
qemu-io -t writeback -f raw "$u" -c 'write -P 0x61 0 2M' -c flush >/dev/null
touch "$T/bad.fail"
qemu-io -f raw "$u" -c 'read -P 0x61 0 2M' >"$T/qio" 2>&1 || { cat "$T/qio"; fail "read failed"; }
grep -qiE 'error|fail|mismatch' "$T/qio" && { cat "$T/qio"; fail "read error reached the client"; }
# The read is served from the other copy first; the rewrite of the bad
# range (which fails here: the disk fails every read) then fails it out.
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q "bad.disk.sock (FAILED: read error" <<<"$out" && break
  sleep 0.1
done
grep -q "bad.disk.sock (FAILED: read error" <<<"$out" || fail "bad not FAILED: $out"
grep -q "$T/b (ACTIVE)" <<<"$out" || fail "b not ACTIVE: $out"
stop m0
