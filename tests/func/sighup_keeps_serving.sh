# SIGHUP (a closed terminal, a service manager's reload) never stops the
# server: it logs that it ignored it and serves on; then stop is clean.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x21 0 64k' >/dev/null
kill -HUP "$(server_pid m0)"
for _ in $(seq 1 200); do grep -q "SIGHUP ignored" "$T/m0.log" && break; sleep 0.05; done
grep -q "SIGHUP ignored" "$T/m0.log" || fail "no sign that SIGHUP was taken"
kill -0 "$(server_pid m0)" 2>/dev/null || fail "the server died on SIGHUP"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x21 0 64k' -c 'write -P 0x22 64k 64k' \
  >/dev/null || fail "no I/O after SIGHUP"
bm status m0 | has COMPLETE || fail "not COMPLETE after SIGHUP"
[ -S "$T/m0.sock" ] || fail "socket gone after SIGHUP"
stop m0
for f in a b; do bm dump "$T/$f" | has "Flags: NONE" || fail "$f not clean"; done
