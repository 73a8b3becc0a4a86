# A component that answers every request, in order, but slowly, behind a
# deep queue (a remote export on a slow link, many clients on one rotating
# disk) is not given up although each request waits there longer than
# --io-timeout: it is slow, not hung (only a request passed over by later
# ones, or a component that answers nothing, is; see the stuck_* and
# hung_* tests).  Here a 4 MiB/s disk holds 16 writes of 1 MiB: each waits
# ~4 s with an io-timeout of 2 s.  A write to a region of the write-intent
# bitmap not yet marked (32 MiB regions) comes 2 s in: the bitmap block
# written for it waits behind that queue too.  The version that timed a
# request from its submission disconnected the disk ~2 s into the writes;
# the one that did so only for the data path, when it wrote the bitmap.
# A third client flushes while the queue is there: the disk answers a
# flush at once (a server may answer it ahead of older writes), which is
# no sign that the older writes are stuck.
. "$(dirname "$0")/lib.sh"
need fio
need jq
mkimg 65 a
emudisk s size=65M rate=4
bm label -n -r 32M m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 2
fio --ioengine=nbd --uri="$(uri m0)" --rw=write --output-format=json \
  --name=w --bs=1M --iodepth=16 --size=24M \
  --name=b --bs=4k --iodepth=1 --offset=40M --size=4k --startdelay=2 \
  --name=f --bs=4k --iodepth=1 --offset=30M --size=8k --fsync=1 --startdelay=1 \
  >"$T/fio.json" 2>"$T/fio.err" ||
  { cat "$T/fio.err"; fail "fio's writes failed"; }
st=$(bm status m0) || fail "status says the mirror is not healthy: $st"
grep -q DISCONNECTED <<<"$st" && fail "the slow component was given up: $st"
[ "$(grep -c ACTIVE <<<"$st")" -ge 2 ] || fail "not both components ACTIVE: $st"
grep -qE "io-timeout|bitmap|timed out" "$T/m0.log" && fail "the server gave a component up: $(cat "$T/m0.log")"
# The case was shown: writes, and the one that needed a bitmap block,
# waited longer than the io-timeout.
for j in 0 1; do
  max_ms=$(sed -n '/^{/,$p' "$T/fio.json" | jq ".jobs[$j].write.clat_ns.max / 1000000 | floor")
  echo "job $j: longest write $max_ms ms" >&2
  [ "$max_ms" -ge 2500 ] || fail "job $j's longest write took $max_ms ms: the queue never outlasted the io-timeout"
done
stop m0
# The slow component holds the writes (its first and last MiB written;
# reading all 24 MiB back at 4 MiB/s would take 6 s).
for off in 0 $((23 * MIB)); do
  nbdsh -u "$(disk_uri s)" -c "import sys; sys.stdout.buffer.write(h.pread($MIB, $off))" \
    >"$T/s.part" || fail "could not read s back at $off"
  cmp "$T/s.part" <(tail -c +$((off + 1)) "$T/a" | head -c $MIB) ||
    fail "the slow component differs from the other at $off"
done
