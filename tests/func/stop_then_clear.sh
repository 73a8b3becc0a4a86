# When stop returns the server has exited: the components are clean and
# closed, so `clear` works at once and `status` says STOPPED (exit 3).
# Repeated, because the old stop returned before the server exited.
. "$(dirname "$0")/lib.sh"
need qemu-io
for i in 1 2 3; do
  mkimg 16 a$i b$i
  bm label -n m$i "$T/a$i" "$T/b$i"
  serve m$i
  qemu-io -f raw "$(uri m$i)" -c 'write -P 0x44 0 1M' >/dev/null
  out=$(bm stop m$i) || fail "stop m$i failed"
  [ "$out" = "m$i stopped cleanly" ] || fail "stop said '$out'"
  rc=0; st=$(bm status m$i) || rc=$?
  [ $rc -eq 3 ] || fail "status right after stop exited $rc"
  echo "$st" | has "m$i  *STOPPED" || fail "status right after stop: $st"
  echo "$st" | has "$T/a$i (clean" || fail "a$i not clean right after stop: $st"
  bm clear "$T/b$i" >/dev/null || fail "clear right after stop failed"
  wait "$(server_pid m$i)" || fail "server m$i exited nonzero"
done
expect_error "mirror 'm1' is not running" bm stop m1
