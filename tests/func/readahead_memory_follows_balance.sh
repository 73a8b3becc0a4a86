#!/usr/bin/env bash
# The read-ahead's chunk memory (64 MiB by default, kept resident while
# idle and warmed before the first stream) is only the `stream`
# balance's: a mirror on another balance has none; one switched to
# stream gets it, and switched away gives it back (after its chunks have
# been idle a second).
. "$(dirname "$0")/lib.sh"
mkimg 80 a b
bm label -n -b prefer m0 "$T/a" "$T/b" >/dev/null
serve m0
pid=$(server_pid m0)
rss_mib() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$pid/status"; }
# rss_until OP N: polls up to 5 s for RSS OP N MiB; prints the last RSS
rss_until() {
  local r=0
  for _ in $(seq 1 50); do
    r=$(rss_mib); [ "$r" "$1" "$2" ] && break; sleep 0.1
  done
  echo "$r"
}
sleep 1.5   # several ticks of the event thread
rss=$(rss_mib)
echo "prefer: server RSS $rss MiB"
[ "$rss" -lt 40 ] || fail "a mirror on prefer holds $rss MiB (read-ahead memory it never uses)"
bm configure -b stream m0
rss=$(rss_until -ge 64)
echo "stream: server RSS $rss MiB"
[ "$rss" -ge 64 ] || fail "switched to stream, the chunk memory was not warmed: $rss MiB"
bm configure -b round-robin m0
# (under AddressSanitizer the shadow of memory that was used stays
# resident after munmap: RSS measures ASan there, so the drop is the
# plain build's check)
if [ "${BUILD:-build}" != build-san ]; then
  rss=$(rss_until -lt 40)
  echo "round-robin: server RSS $rss MiB"
  [ "$rss" -lt 40 ] || fail "switched away from stream, the server still holds $rss MiB"
fi
stop m0
