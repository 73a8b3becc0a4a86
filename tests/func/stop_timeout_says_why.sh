# stop --timeout: when the server cannot finish stopping in time (here a
# component that hangs on the final flush), stop exits 1 saying what the
# server is still doing; status says it is stopping, not STOPPED.  Once the
# component answers again the server finishes on its own and exits 0.
. "$(dirname "$0")/lib.sh"
need qemu-io
hangdisk d0 64
mkimg 64 b
bm label -n m0 "$(disk_uri d0)" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x66 0 1M' >/dev/null
hang d0
expect_error "m0 \(pid $(server_pid m0)\) has not stopped after 1 s; it is still flushing the components" \
  bm stop --timeout 1 m0
expect_error "m0 is stopping: flushing" bm status m0
kill -0 "$(server_pid m0)" || fail "server gone while a component hangs"
answer d0
wait "$(server_pid m0)" || fail "server exited nonzero"
grep -q "m0: stopped cleanly" "$T/m0.log" || fail "no clean stop in the log"
expect_error "mirror 'm0' is not running" bm stop m0
bm dump "$T/b" | has "Flags: NONE" || fail "b not clean"
