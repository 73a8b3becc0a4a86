# A client's large WRITE_ZEROES and TRIM, onto a component that zeroes by
# writing (an NBD server without a zero of its own: nbdkit then writes
# zeros) at 7 MiB/s, with --io-timeout 2: each component gets the range in
# pieces one after another, each ending well within the io-timeout, so the
# component is never taken for hung; the client's requests succeed and
# both copies read zeros there.  (Before: one 32 MiB request per component
# took ~4.5 s, the watchdog saw nothing end for 2 s and disconnected the
# component, which was then copied again.)
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 64 a
head -c $((64 * MIB)) /dev/zero | tr '\0' '\063' >"$T/a"      # old data ...
cp "$T/a" "$T/z.img"                                          # ... on both
zerowriting_disk z "$T/z.img" 7
bm label -n m0 "$T/a" "$(disk_uri z)"
serve m0 --io-timeout 2
bm status m0 | has COMPLETE || fail "not COMPLETE at the start: $(bm status m0)"
# 24 MiB zeroed, then 12 MiB trimmed, each one request of the client's
start=$(date +%s%N)
qemu-io -f raw "$(uri m0)" -c 'write -z 4M 24M' -c 'discard 32M 12M' >"$T/q.out" 2>&1 ||
  { cat "$T/q.out"; fail "the client's zeroing failed"; }
ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep -qiE 'error|fail' "$T/q.out" && { cat "$T/q.out"; fail "client saw an error"; }
has ComponentDisconnected "$T/m0.log" &&
  { cat "$T/m0.log"; fail "the slow-zeroing component was taken for hung"; }
# the case was shown: the slow component took longer than the io-timeout
[ "$ms" -ge 2500 ] || fail "the zeroing took $ms ms: the component was not slow enough to show the case"
bm status m0 | has COMPLETE || fail "not COMPLETE after the zeroing: $(bm status m0)"
stop m0
# zeros in [4M, 28M) and [32M, 44M), the old data around them
zeros() { cmp -n $(($3 * MIB)) -i $(($2 * MIB)):0 "$T/$1" /dev/zero >/dev/null; }
old() { [ "$(tail -c +$(($2 * MIB + 1)) "$T/$1" | head -c $(($3 * MIB)) | tr -d '\063' | wc -c)" -eq 0 ]; }
for f in a z.img; do
  zeros "$f" 4 24 || fail "$f does not read zeros where the client zeroed"
  zeros "$f" 32 12 || fail "$f does not read zeros where the client trimmed"
  old "$f" 0 4 && old "$f" 28 4 && old "$f" 44 19 ||
    fail "$f: data outside the zeroed ranges changed"
done
same_data "$T/a" "$T/z.img"
echo "ok: a client's large zeroing and trim reach a slow-zeroing component in pieces (${ms} ms)"
