# Every balance algorithm, on components of different speed (a file and a
# slower NBD disk), under writers and sequential + random readers on
# several connections at once: every block read is the newest acknowledged
# version or newer (tests/tools/nbd_stress.c); the components end identical.
. "$(dirname "$0")/lib.sh"
need nbdkit
mkimg 40 fast
disk slow 40M --filter=delay rdelay=1ms wdelay=1ms
bm label m0 "$T/fast" "$(disk_uri slow)"
serve m0
wait_complete m0
for alg in stream round-robin load prefer split; do
  bm configure -b "$alg" -s 16k m0
  "$TEST_TOOLS/nbd_stress" "$(uri m0)" 3 2 3 >"$T/stress.$alg" 2>&1 ||
    { cat "$T/stress.$alg"; fail "$alg: inconsistent reads"; }
  echo "$alg: $(tail -n 1 "$T/stress.$alg")"
done
stop m0
nbdcopy "$(disk_uri slow)" "$T/slow.img"
cmp -n $((39 * MIB)) "$T/fast" "$T/slow.img" || fail "components differ"
