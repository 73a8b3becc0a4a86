# Scenario 21: a component that stops answering (hangdisk in lib.sh) is
# given up after --io-timeout: the client's reads and writes complete from
# the other component, status answers at once all along and says
# DISCONNECTED, and when the component answers again it is reconnected,
# copied, and the mirror is COMPLETE with identical copies.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
hangdisk p 64
bm label -n m0 "$T/a" "$(disk_uri p)"
serve m0 --io-timeout 2
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 0 1M' >/dev/null
hang p
start=$(date +%s%N)
qemu-io -f raw "$u" -c 'write -P 0x22 1M 1M' -c 'read -P 0x11 0 1M' >"$T/qio" 2>&1 ||
  { cat "$T/qio"; fail "client I/O failed while a component hung"; }
grep -qiE 'error|fail' "$T/qio" && { cat "$T/qio"; fail "client saw an error"; }
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 10000 ] || fail "client I/O took $ms ms with io-timeout 2 s"
t0=$(date +%s%N)
out=$(timeout 5 "$BLKMIRROR" status m0) && fail "status exited 0 while a component hangs"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 1000 ] || fail "status took $ms ms while a component hangs"
echo "$out" | has "DISCONNECTED: no answer for 2 s" || fail "status: $out"
answer p
wait_complete m0
qemu-io -f raw "$u" -c 'read -P 0x22 1M 1M' >/dev/null || fail "data lost"
stop m0
cmp -n $((63 * MIB)) "$T/a" "$T/p.img" || fail "copies differ after reconnect"
