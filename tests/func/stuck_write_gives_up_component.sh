# A component that completes every write but one (stuck at one offset)
# while it answers the others is given up after --io-timeout: the client's
# write is acknowledged from the other copy instead of waiting for ever,
# the copies are identical after the component answers again and rejoins
# (the write it never acknowledged is copied to it), and the data is there.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
hangdisk s 65 $((8 * MIB))
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 2
u=$(uri m0)
hang s
start=$(date +%s%N)
qemu-io -f raw "$u" -c 'write -P 0x77 8M 64k' >"$T/stuck.out" 2>&1 &
stuck=$!
i=0
while kill -0 "$stuck" 2>/dev/null; do
  [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 15000 ] ||
    fail "the stuck write was not acknowledged within 15 s (io-timeout 2 s)"
  qemu-io -f raw "$u" -c "write -P 0x33 $((16 * MIB + i * 65536)) 4k" >/dev/null ||
    fail "another write failed"
  i=$((i + 1))
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$stuck" || { cat "$T/stuck.out"; fail "the stuck write failed"; }
grep -qiE 'error|fail' "$T/stuck.out" && { cat "$T/stuck.out"; fail "client saw an error"; }
[ "$i" -ge 3 ] || fail "only $i other writes while one was stuck: the case was not shown"
[ "$ms" -ge 2000 ] || fail "given up after $ms ms, before the io-timeout (2 s)"
out=$(bm status m0) && fail "status exited 0 with s given up: $out"
grep -q "DISCONNECTED: a request unanswered for 2 s while others were answered" <<<"$out" ||
  fail "status does not say why: $out"
answer s
wait_complete m0
qemu-io -f raw -r "$u" -c 'read -P 0x77 8M 64k' >/dev/null || fail "the acknowledged write is not there"
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/s.img" || fail "copies differ after the rejoin"
