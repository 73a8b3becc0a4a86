# A source component that answers reads and writes but never answers an
# allocation question (NBD BLOCK_STATUS) holds nothing up: the copy takes
# each range as data after io-timeout and completes, and the stop ends at
# once.  Before, the question given up stayed in flight uncounted, and the
# close at the stop waited for its answer for ever.
. "$(dirname "$0")/lib.sh"
need nbdkit
truncate -s 32M "$T/e.img"
touch "$T/e.hang"
nbdkit -U "$T/e.disk.sock" -P "$T/e.disk.pid" eval \
  get_size="echo $((32 * MIB))" can_write='exit 0' can_flush='exit 0' \
  can_multi_conn='exit 0' can_extents='exit 0' thread_model='echo parallel' flush=true \
  pread="dd if=$T/e.img skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
  pwrite="dd of=$T/e.img seek=\$4 conv=notrunc oflag=seek_bytes status=none" \
  extents="while [ -e $T/e.hang ]; do sleep 0.05; done; exit 1" \
  >>"$T/e.disk.log" 2>&1 || fail "nbdkit did not start"
for _ in $(seq 1 100); do [ -s "$T/e.disk.pid" ] && break; sleep 0.05; done
PIDS+=("$(cat "$T/e.disk.pid")")
E="nbd+unix:///?socket=$T/e.disk.sock"
mkimg 32 b
bm label m0 "$E" "$T/b" >/dev/null     # b is copied from e
serve m0 --io-timeout 2
wait_complete m0
pid=$(server_pid m0)
t0=$(date +%s)
timeout 30 "$BLKMIRROR" stop m0 >/dev/null || fail "stop did not end: $(tail -5 "$T/m0.log")"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the server still runs $(( $(date +%s) - t0 )) s after stop"
echo "stopped in $(( $(date +%s) - t0 )) s"
rm -f "$T/e.hang"
