# repair while a client writes (16 writes in flight, each acknowledged one
# recorded): the repair's writes and the client's never interleave in a
# chunk, so every acknowledged write reads back afterwards, the ranges
# changed behind the server's back are mended, and the copies end
# identical.
. "$(dirname "$0")/lib.sh"
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 65 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
for mib in 2 17 33 50 63; do
  printf 'garbage' | dd of="$T/b" bs=1 seek=$((mib * MIB + 512)) conv=notrunc status=none
done
"$PY" "$tool" write "$(uri m0)" "$T/acked" 12000 16 3 200 >"$T/writer.out" 2>&1 &
writer=$!
PIDS+=("$writer")
# The repair starts once the mirror sees the writes, and must end before
# the writer does.
for _ in $(seq 1 100); do
  st=$(bm stat --json -c 1 -I 0.1 m0) || true
  grep -qE '"name":"mirror/m0","queue":[0-9]+,"ops_s":[0-9.]+,"r_s":[0-9.]+,"r_kBps":[0-9.]+,"ms_r":[0-9.]+,"w_s":[1-9]' <<<"$st" && break
done
grep -qE '"name":"mirror/m0".*"w_s":[1-9]' <<<"$st" || fail "the writer did not start: $st"
out=$(bm repair m0) || fail "repair during writes exited $?: $out"
kill -0 "$writer" 2>/dev/null || fail "the writer ended before the repair did"
grep -q "^m0: source $T/a " <<<"$out" || fail "repair said: $out"
wait "$writer" || { cat "$T/writer.out"; fail "the writer failed"; }
grep -q "failed 0$" "$T/writer.out" || { cat "$T/writer.out"; fail "the client saw errors"; }
out=$(bm check m0) || fail "check after the repair exited $?: $out"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
same_data "$T/a" "$T/b"
