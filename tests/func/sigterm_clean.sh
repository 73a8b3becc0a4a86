# SIGTERM drains, flushes, marks clean and exits 0; the next start does not
# resynchronize.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x33 0 1M' >/dev/null
bm dump "$T/a" | has "Flags: DIRTY" || fail "not DIRTY while writes are recent"
kill -TERM "$(server_pid m0)"
rc=0; wait "$(server_pid m0)" || rc=$?
[ $rc -eq 0 ] || fail "server exited $rc on SIGTERM"
grep -q "stopped cleanly" "$T/m0.log" || fail "no clean stop message"
for f in a b; do bm dump "$T/$f" | has "Flags: NONE" || fail "$f not clean"; done
serve m0
bm status m0 | has COMPLETE || fail "not COMPLETE after clean restart"
grep -q "synchronizing" "$T/m0.log" && fail "a clean restart resynchronized"
stop m0
# a name given twice is stopped once (before: stopped, then "not running",
# exit 1)
serve m0
pid=$(server_pid m0)
out=$(bm stop m0 m0 2>&1) || fail "stop m0 m0: $out"
[ "$out" = "m0 stopped cleanly" ] || fail "stop m0 m0 said: $out"
wait "$pid" || true
