# A read error inside a range a client is zeroing slowly (32 MiB in 8 MiB
# pieces, 1.5 s a piece on the component that erred: ~6 s): the repair of
# that range cannot have it until the zeroing ends.  Its pending hold must
# not keep the client's other writes to the range waiting that long: the
# repair gives the range back after a short wait and is tried again later
# (recover.c).  Before, a client write next to the zeroing, overlapping
# the repair's range, waited for the whole zeroing (~5 s here).  The
# repair still happens once the zeroing has ended.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 128 a
head -c $((127 * MIB)) /dev/urandom >"$T/data"
dd if="$T/data" of="$T/a" conv=notrunc status=none
disk bad 128M --filter=log --filter=error --filter=delay logfile="$T/bad.reqlog" \
  error-pread=EIO error-pread-rate=100% error-pread-file="$T/bad.rfail" delay-zero=1500ms
nbdcopy "$T/data" "$(disk_uri bad)"
bm label -n -b prefer m0 "$(disk_uri bad)" "$T/a"   # prefer: bad reads
serve m0
u=$(uri m0)
slow_zeroing bad 8M 32M
# A read across the zeroing's start fails on bad (served from a), and
# asks for a repair of [8M - 64k, 8M + 64k) on bad.
touch "$T/bad.rfail"
qemu-io -f raw "$u" -c 'read 8128k 128k' >"$T/r.out" 2>&1 || { cat "$T/r.out"; fail "the read failed"; }
rm -f "$T/bad.rfail"
grep -qiE 'error|fail' "$T/r.out" && { cat "$T/r.out"; fail "the read error reached the client"; }
grep -q "Read id=.* return=-1 error=EIO" "$T/bad.reqlog" || fail "the read did not fail on bad"
# A write before the zeroing, inside the repair's range.
write_beside_zeroing 8128k "the repair"
grep -q ReadErrorRepaired "$T/m0.log" && fail "the range was repaired before the zeroing ended: nothing was shown"
wait "$zeroer" || { cat "$T/z.out"; fail "the zeroing failed"; }
# The repair, tried again, gets the range once the zeroing has ended.
for _ in $(seq 1 100); do
  grep -q "ReadErrorRepaired $(disk_uri bad).*offset 8323072, length 131072" "$T/m0.log" && break
  sleep 0.1
done
grep -q "ReadErrorRepaired $(disk_uri bad).*offset 8323072, length 131072" "$T/m0.log" ||
  fail "the repair was not done after the zeroing: $(cat "$T/m0.log")"
out=$(bm status m0) || fail "status: $out"
has "bad.disk.sock (ACTIVE)" <<<"$out" || fail "bad not ACTIVE: $out"
stop m0
nbdcopy "$(disk_uri bad)" "$T/bad.img"
cmp -n $((128 * 1024)) -i $((8 * MIB - 65536)) "$T/bad.img" "$T/a" ||
  fail "the copies differ in the repaired range"
head -c 65536 /dev/zero | tr '\0' '\142' | cmp -n 65536 -i 0:$((8 * MIB - 65536)) - "$T/a" ||
  fail "the client's write is not on a"
cmp -n $((32 * MIB)) -i $((8 * MIB)):0 "$T/a" /dev/zero >/dev/null ||
  fail "a does not read zeros where the client zeroed"
echo "ok: the write took $ms ms while the repair waited for the zeroing"
