# A component that comes back catches up over the bitmap's dirty regions
# only: deactivate + writes to one region + activate copies that region;
# an NBD component killed and restarted while writes go on copies only
# what was written meanwhile.  Copies are identical after stop.  rebuild
# still copies in full.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 65 a b r.img
start_r() {
  rm -f "$T/r.sock"
  nbdkit -U "$T/r.sock" -P "$T/r.pid" file "$T/r.img" >>"$T/r.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$T/r.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/r.pid")")
}
# copied bytes of the last "synchronized" line about $1
last_copy() { grep "$1 synchronized:" "$T/m0.log" | tail -n 1; }
copied() { sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$(last_copy "$1")"; }
start_r
ruri="nbd+unix:///?socket=$T/r.sock"
bm label -n -r 1M m0 "$T/a" "$T/b" "$ruri"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x31 0 8M' >/dev/null
# idle and complete: the bits are cleared (the idle clean, 2 s)
wait_clear() {
  for _ in $(seq 1 200); do
    out=$(bm list m0) || true
    grep -q "regions, 0 dirty" <<<"$out" && return 0
    sleep 0.1
  done
  fail "the bits were not cleared once idle: $(grep Bitmap <<<"$out")"
}
wait_clear

# deactivate, write into region 10 only, activate: one region copied
bm deactivate m0 "$T/b"
qemu-io -f raw "$u" -c 'write -P 0x41 10M 256k' -c flush >/dev/null
# the idle clean runs while b is out: the bit must stay (degraded)
for _ in $(seq 1 200); do
  out=$(bm list m0) || true
  grep -q "Flags: DIRTY" <<<"$out" || break
  sleep 0.1
done
grep -q "Flags: DIRTY" <<<"$out" && fail "the mirror was never marked clean"
grep -q "regions, 1 dirty: 10$" <<<"$out" ||
  fail "the bit of region 10 did not survive a clean while degraded: $(grep Bitmap: <<<"$out")"
bm activate --wait m0 "$T/b" >/dev/null || fail "activate --wait failed"
line=$(last_copy "$T/b")
[[ $line == *"dirty regions only"* ]] || fail "activate did not use the bitmap: $line"
[ "$(copied "$T/b")" -le $((1 * MIB)) ] || fail "activate copied $(copied "$T/b") bytes, more than one region"
[ "$(copied "$T/b")" -gt 0 ] || fail "activate copied nothing"

# the NBD component dies while a client writes (the mirror dirty: one
# write to region 50 first); it comes back
wait_clear
qemu-io -f raw "$u" -c 'write -P 0x50 50M 4k' >/dev/null
kill -9 "$(cat "$T/r.pid")"; rm -f "$T/r.pid"
qemu-io -f raw "$u" -c 'write -P 0x51 20M 1M' -c 'write -P 0x52 40M 64k' >/dev/null ||
  fail "writes while r was away failed"
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q DISCONNECTED <<<"$out" && break
  sleep 0.1
done
grep -q "r.sock (DISCONNECTED" <<<"$out" || fail "not DISCONNECTED: $out"
qemu-io -f raw "$u" -c 'write -P 0x53 30M 4k' >/dev/null || fail "write while away failed"
start_r
wait_complete m0
line=$(last_copy "r.sock")
[[ $line == *"dirty regions only"* ]] || fail "the reconnect did not use the bitmap: $line"
n=$(copied "r.sock")
# regions 20, 30, 40 and 50: far below the 64 MiB of a full copy
[ "$n" -le $((4 * MIB)) ] || fail "the reconnect copied $n bytes"
[ "$n" -ge $((1 * MIB)) ] || fail "the reconnect copied only $n bytes"

# rebuild is a full copy
bm rebuild --wait m0 "$T/b" >/dev/null || fail "rebuild --wait failed"
line=$(last_copy "$T/b")
[[ $line == *"(in full)"* ]] || fail "rebuild did not copy in full: $line"
qemu-io -f raw "$u" -c 'read -P 0x41 10M 256k' -c 'read -P 0x51 20M 1M' \
  -c 'read -P 0x53 30M 4k' -c 'read -P 0x52 40M 64k' -c 'read -P 0x50 50M 4k' >"$T/read.out"
[ "$(grep -c '^read' "$T/read.out")" = 5 ] || fail "data lost: $(cat "$T/read.out")"
stop m0
same_data "$T/a" "$T/b"
cmp -n $((64 * MIB)) "$T/a" "$T/r.img" || fail "copies of a and r differ"
