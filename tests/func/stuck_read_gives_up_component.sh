# A component that answers every request but one (a read stuck at one
# offset: a lost reply, a sector the disk retries for ever) is given up
# after --io-timeout although it keeps completing other reads: the stuck
# client read is then served from the other copy, status says why, and
# once the component answers again it rejoins.  ("Completed nothing for
# io-timeout" alone never fires here: this hung the client for ever.)
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
hangdisk s 65 $((8 * MIB))
bm label -n -b prefer m0 "$T/a" "$(disk_uri s)"
bm configure -p 5 m0 "$(disk_uri s)" || fail "configure -p"
serve m0 --io-timeout 2
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x5a 8M 64k' >/dev/null || fail "write"
hang s
start=$(date +%s%N)
qemu-io -f raw -r "$u" -c 'read -P 0x5a 8M 4k' >"$T/stuck.out" 2>&1 &
stuck=$!
# Other reads go on being answered by s (prefer: priority 5) meanwhile.
i=0
while kill -0 "$stuck" 2>/dev/null; do
  [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 15000 ] ||
    fail "the stuck read was not served elsewhere within 15 s (io-timeout 2 s)"
  qemu-io -f raw -r "$u" -c "read $((16 * MIB + i * 65536)) 4k" >/dev/null ||
    fail "another read failed"
  i=$((i + 1))
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$stuck" || { cat "$T/stuck.out"; fail "the stuck read failed"; }
grep -qiE 'error|fail' "$T/stuck.out" && { cat "$T/stuck.out"; fail "client saw an error"; }
[ "$i" -ge 3 ] || fail "only $i other reads while one was stuck: the case was not shown"
[ "$ms" -ge 2000 ] || fail "given up after $ms ms, before the io-timeout (2 s)"
out=$(bm status m0) && fail "status exited 0 with s given up: $out"
grep -q "DISCONNECTED: a request unanswered for 2 s while others were answered" <<<"$out" ||
  fail "status does not say why: $out"
answer s
wait_complete m0
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/s.img" || fail "copies differ after the rejoin"
