# `check` while a client zeroes slowly (32 MiB from 8.5 MiB, in 8 MiB
# pieces of 1.5 s each on one component: ~6 s): the check's chunk
# [8 MiB, 9 MiB) cannot be compared until the zeroing has ended.  Its
# pending hold must not keep the client's other writes to that chunk
# waiting so long: the check gives the chunk back after a short wait and
# asks again (check.c hold_chunk).  Before, a write to [8 MiB, 8 MiB +
# 64 KiB), next to the zeroing, waited for the whole of it (~5.5 s);
# now at most the check's try under way (200 ms, then 400, 800, ...), so
# it must end while the zeroing still runs.  The check still compares
# every chunk and finds the copies identical.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
head -c $((64 * MIB)) /dev/urandom >"$T/data"
dd if="$T/data" of="$T/a" conv=notrunc status=none
disk slow 65M --filter=log --filter=delay logfile="$T/slow.reqlog" delay-zero=1500ms
nbdcopy "$T/data" "$(disk_uri slow)"
bm label -n m0 "$(disk_uri slow)" "$T/a"
serve m0
slow_zeroing slow 8704k 32M
bm check m0 >"$T/check.out" 2>&1 &
checker=$!
PIDS+=("$checker")
# the check has compared the 8 chunks before the zeroing and waits
for _ in $(seq 1 100); do
  bm status m0 | has "check running, 12% compared" && break
  sleep 0.05
done
bm status m0 | has "check running, 12% compared" ||
  fail "the check is not waiting at 8 MiB: $(bm status m0)"
write_beside_zeroing 8M "the check"
wait "$zeroer" || { cat "$T/z.out"; fail "the zeroing failed"; }
wait "$checker" || { cat "$T/check.out"; fail "the check exited non-zero"; }
grep -q "m0: 2 ACTIVE components identical" "$T/check.out" || fail "check said: $(cat "$T/check.out")"
stop m0
head -c 65536 /dev/zero | tr '\0' '\142' | cmp -n 65536 -i 0:$((8 * MIB)) - "$T/a" ||
  fail "the client's write is not on a"
echo "ok: the write took $ms ms while the check waited for the zeroing"
