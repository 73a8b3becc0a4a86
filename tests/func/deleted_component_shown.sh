# A component file deleted while it is served (the server would go on
# writing into the deleted inode) is shown as gone within a second or so,
# idle or not, and the mirror as DEGRADED: status never claims redundancy
# that is not there.
. "$(dirname "$0")/lib.sh"
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
bm status m0 >/dev/null || fail "not COMPLETE at first"
rm "$T/b"
start=$(date +%s%N)
for _ in $(seq 1 40); do
  rc=0; out=$(bm status m0) || rc=$?
  grep -q "$T/b (DISCONNECTED" <<<"$out" && break
  sleep 0.1
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "$T/b (DISCONNECTED: .*deleted" <<<"$out" || fail "deleted file not shown: $out"
[ $rc -eq 2 ] || fail "status exited $rc with a deleted component, want 2"
[ "$ms" -lt 2000 ] || fail "took $ms ms to notice"
echo "noticed in $ms ms"
stop m0
