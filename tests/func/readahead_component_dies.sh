# A component dies while a stream reads ahead from it: its pieces in
# flight fail, the chunks after them are dropped (their pieces not yet
# sent are never read), it takes no new chunk, and the client's reads
# come from the other copy: the whole stream reads the disks' data, the
# dead one is DISCONNECTED, and the server stops cleanly.
. "$(dirname "$0")/lib.sh"
need nbdcopy
MIB=$((1024 * 1024))
stream_mirror m0 e0 e1 size=256M rate=80 fill=9
# one stream, one request in flight (nbdcopy's own defaults read ahead)
nbdcopy --connections=1 --requests=1 --request-size=131072 "$(uri m0)" "$T/via-mirror" \
  >"$T/reader.log" 2>&1 &
reader=$!
read_bytes() { bm stat --prometheus m0 | sed -n 's/^blkmirror_mirror_read_bytes_total{mirror="m0"} //p'; }
for _ in $(seq 1 200); do [ "$(read_bytes)" -ge $((16 * MIB)) ] && break; sleep 0.05; done
[ "$(read_bytes)" -ge $((16 * MIB)) ] || fail "the reader did not get 16 MiB in: $(cat "$T/reader.log")"
kill "$(cat "$T/e1.disk.pid")"
wait $reader || fail "the stream failed after e1 died: $(cat "$T/reader.log")"
size=$(stat -c %s "$T/via-mirror")
[ "$size" -gt $((200 * MIB)) ] || fail "the stream read $size bytes"
nbdcopy "$(disk_uri e0)" "$T/direct" || fail "nbdcopy from e0 failed"
cmp -n "$size" "$T/direct" "$T/via-mirror" ||
  fail "the stream read other data than the disks hold"
out=$(bm status m0) || true
grep -q "e1.disk.sock (DISCONNECTED" <<<"$out" || fail "e1 not DISCONNECTED: $out"
stop m0
grep -q "stopped cleanly" "$T/m0.log" || fail "not a clean stop: $(tail -n 5 "$T/m0.log")"
