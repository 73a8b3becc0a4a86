# Under load, components fail in turn while one stays usable: an NBD
# component dies and comes back, another stops answering (io-timeout 2 s)
# and answers again.  The client (16 writes in flight, 8000 of them)
# never sees an error, every acknowledged write reads back, and the mirror
# ends COMPLETE with identical copies.
. "$(dirname "$0")/lib.sh"
need nbdsh
need qemu-io
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 256 a b.img
start_b() {
  rm -f "$T/b.sock"
  nbdkit -U "$T/b.sock" -P "$T/b.pid" file "$T/b.img" >>"$T/b.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/b.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/b.pid")")
}
start_b
hangdisk c 256
bm label -n m0 "$T/a" "nbd+unix:///?socket=$T/b.sock" "$(disk_uri c)"
serve m0 --io-timeout 2
"$PY" "$tool" write "$(uri m0)" "$T/acked" 8000 16 7 300 >"$T/writer.out" 2>&1 &
writer=$!
sleep 1
kill -9 "$(cat "$T/b.pid")"                       # b dies
sleep 0.5
hang c                                            # c hangs
sleep 3                                           # past io-timeout
start_b                                           # b is back
sleep 1
answer c                                          # c answers again
wait $writer || { cat "$T/writer.out"; fail "the writer failed"; }
cat "$T/writer.out"
grep -q "failed 0$" "$T/writer.out" || { tail -n 20 "$T/m0.log"; fail "the client saw errors"; }
grep -q "DISCONNECTED\|ComponentDisconnected" "$T/m0.log" || fail "no fault happened during the load"
wait_complete m0
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
cmp -n $((255 * MIB)) "$T/a" "$T/b.img" || fail "a and b differ"
cmp -n $((255 * MIB)) "$T/a" "$T/c.img" || fail "a and c differ"
