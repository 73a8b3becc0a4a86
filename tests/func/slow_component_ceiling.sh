# A component that answers in order but too slowly is given up once a
# request has waited 4 x --io-timeout (the ceiling on how long a slow
# queue is waited for: overloaded_component_kept shows one under it kept).
# Here a 1 MiB/s disk holds 16 writes of 512 KiB (each would wait ~8 s)
# with an io-timeout of 1 s: given up at ~4-5 s, status says why, and the
# writes are acknowledged from the other copy.
. "$(dirname "$0")/lib.sh"
need fio
mkimg 65 a
emudisk s size=65M rate=1
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 1
start=$(date +%s%N)
fio --ioengine=nbd --uri="$(uri m0)" --rw=write --bs=512k --iodepth=16 --size=16M \
  --name=w >"$T/fio.log" 2>&1 || { cat "$T/fio.log"; fail "fio's writes failed"; }
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "writes took $ms ms" >&2
# 16 MiB at 1 MiB/s would take 16 s: the rest went to the fast copy alone
[ "$ms" -lt 12000 ] || fail "the writes took $ms ms: the slow component was waited for"
st=$(bm status m0) && fail "status exited 0 with the slow component given up: $st"
grep -q "DISCONNECTED: a request unanswered for 4 s, too slow (io-timeout 1 s)" <<<"$st" ||
  fail "status does not say why: $st"
grep -q "too slow" "$T/m0.log" || fail "the log does not say it"
