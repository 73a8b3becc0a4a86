# A mirror written without a pause (never idle for the 2 s idle clean)
# still clears the bits of the regions it left: the settle pass, every
# 5 s, clears a region no write touched for a whole period, after a flush
# of every component.  A kill -9 then copies only the region still being
# written, not every region written since the start.  While a component
# is out, no bit is cleared (they record what it misses).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a b
bm label -n -r 1M m0 "$T/a" "$T/b"
serve m0
u=$(uri m0)
# dirty regions now, from list (which also says DIRTY or not)
bitmap_line() { bm list m0 | grep "Bitmap: [0-9]* KiB regions"; }

qemu-io -f raw "$u" -c 'write -P 0x33 3M 64k' -c 'write -P 0x34 40M 1M' \
  -c 'write 0 4k' >/dev/null
keep_writing m0
grep -q "3 dirty: 0, 3, 40" <<<"$(bitmap_line)" ||
  fail "regions 0, 3 and 40 not dirty at first: $(bitmap_line)"
# regions 3 and 40 go within two periods and a bit (10 s), region 0 stays
cleared=
for _ in $(seq 1 200); do
  line=$(bitmap_line)
  if grep -q "1 dirty: 0$" <<<"$line"; then cleared=1; break; fi
  sleep 0.1
done
[ -n "$cleared" ] || fail "regions 3 and 40 not cleared while region 0 is written: $line"
out=$(bm list m0)
grep -q "Flags: DIRTY" <<<"$out" ||
  fail "the mirror was marked clean: the idle clean, not the settle pass, cleared: $out"
grep -q "settle\|cannot clear" "$T/m0.log" && fail "errors in the log: $(cat "$T/m0.log")"
# on disk too: a crash now copies region 0 only
kill -9 "$(server_pid m0)"; wait "$(server_pid m0)" 2>/dev/null || true
touch "$T/stop"; wait "$writer" 2>/dev/null || true
out=$(bm dump "$T/b")
grep -q "BitmapState: 1024 KiB regions, 64 regions, 1 dirty: 0;" <<<"$out" ||
  fail "b's bitmap on disk after the crash: $(grep BitmapState <<<"$out")"
# the copies differ in region 0 (a write that reached a only)
printf 'junk' | dd of="$T/b" bs=1 seek=100 conv=notrunc status=none
serve m0
wait_complete m0
line=$(grep "synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"dirty regions only"* ]] || fail "not a dirty-region copy: $line"
copied=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
[ "$copied" -le $MIB ] || fail "copied $copied bytes, more than region 0"
qemu-io -f raw "$u" -c 'read -P 0x33 3M 64k' -c 'read -P 0x34 40M 1M' >"$T/read.out" 2>&1 ||
  fail "data of the cleared regions lost: $(cat "$T/read.out")"
has -q "Pattern verification failed" "$T/read.out" &&
  fail "data of the cleared regions lost: $(cat "$T/read.out")"
[ "$(grep -c '^read' "$T/read.out")" = 2 ] || fail "reads missing: $(cat "$T/read.out")"

# degraded: b out, region 7 written once, region 0 all the while: 7 stays
bm deactivate m0 "$T/b"
qemu-io -f raw "$u" -c 'write -P 0x37 7M 4k' >/dev/null
keep_writing m0
sleep 12
line=$(bitmap_line)
touch "$T/stop"; wait "$writer" || fail "the writer failed"
grep -q "2 dirty: 0, 7$" <<<"$line" ||
  fail "region 7's bit did not stay while b is out: $line"
bm activate --wait m0 "$T/b" >/dev/null || fail "activate --wait failed"
line=$(grep "$T/b synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"dirty regions only"* ]] || fail "activate did not use the bitmap: $line"
copied=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
[ "$copied" -ge $((4 * 1024)) ] && [ "$copied" -le $((2 * MIB)) ] ||
  fail "activate copied $copied bytes, not regions 0 and 7"
stop m0
same_data "$T/a" "$T/b"
echo ok
