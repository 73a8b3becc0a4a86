# The only sync source fails to read: the copy stops, the source stays
# ACTIVE and serving, the target stays SYNCHRONIZING, and status says why;
# once the source reads again the copy is retried after a backoff (no
# reconnect or restart needed) and completes.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 target
# a slow source (25 MiB/s), so the copy is still running when reads start failing
disk src 64M --filter=error --filter=rate error-pread=EIO error-pread-rate=100% \
  error-pread-file="$T/src.fail" rate=200M burstiness=0.05
# data, not holes: a hole is not read (the copy only trims it)
qemu-io -f raw "$(disk_uri src)" -c 'write -P 0x5a 0 16M' >/dev/null
bm label m0 "$(disk_uri src)" "$T/target"
serve m0
touch "$T/src.fail"
for _ in $(seq 1 100); do grep -q "SyncStopped" "$T/m0.log" && break; sleep 0.1; done
out=$(bm status m0) || true
echo "$out" | has "src.disk.sock (ACTIVE)" || fail "source not ACTIVE: $out"
echo "$out" | has "target (SYNCHRONIZING" || fail "target not SYNCHRONIZING: $out"
echo "$out" | has "Note: sync of .* stopped" || fail "no reason shown: $out"
rm "$T/src.fail"
qemu-io -t writeback -f raw "$(uri m0)" -c 'write -P 0x71 0 1M' -c 'read -P 0x71 0 1M' >"$T/qio" 2>&1 ||
  { cat "$T/qio"; fail "the mirror stopped serving"; }
# Nothing kicks the copy: it is retried on its own (after 2 s) and ends.
wait_complete m0
stop m0
qemu-io -f raw "$T/target" -c 'read -P 0x71 0 1M' -c 'read -P 0x5a 1M 15M' \
  -c 'read -P 0 16M 47M' >/dev/null || fail "the target does not hold the data"
