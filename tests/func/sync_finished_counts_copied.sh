# The SyncFinished event and the "synchronized" log line say what the copy
# wrote and how: after activate with one region written meanwhile, the
# bitmap's dirty regions only (one region, not the mirror's size); after
# rebuild, in full.  Before, SyncFinished always said the mirror's size
# ("66060288 bytes copied") whatever was copied.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
bm deactivate m0 "$T/b" >/dev/null
qemu-io -f raw "$(uri m0)" -c 'write -P 0x11 0 64k' >/dev/null
bm activate --wait m0 "$T/b" >/dev/null || fail "activate: $(bm status m0)"
line=$(grep "SyncFinished $T/b:" "$T/m0.log" | tail -1)
echo "$line"
has "activated; copying what it missed (the bitmap's dirty regions)" "$T/m0.log" || fail "activate said: $(grep ComponentActivated "$T/m0.log")"
has "bytes copied (the bitmap's dirty regions only); it is ACTIVE" <<<"$line" || fail "SyncFinished: $line"
n=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
[ "$n" -gt 0 ] && [ "$n" -lt $((32 * MIB)) ] || fail "the copy of one region says $n bytes"
bm rebuild --wait m0 "$T/b" >/dev/null || fail "rebuild: $(bm status m0)"
line=$(grep "SyncFinished $T/b:" "$T/m0.log" | tail -1)
echo "$line"
has "bytes copied (in full); it is ACTIVE" <<<"$line" || fail "SyncFinished after rebuild: $line"
n=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
log_n=$(grep "$T/b synchronized:" "$T/m0.log" | tail -1 | sed -E 's/.*synchronized: ([0-9]+) bytes.*/\1/')
[ "$n" = "$log_n" ] || fail "SyncFinished says $n, the log line $log_n"
stop m0
