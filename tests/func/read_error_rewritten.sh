# Scenario 2 (md's read-error fix): a component that answers a read with an
# error while the other copy reads fine gets the range rewritten from the
# good copy and read back; it stays ACTIVE (a sector that the rewrite
# mends is not a dead disk) and the client never sees the error.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a bad.img
# A disk with one bad range that a write mends, like a remapped sector.
nbdkit -U "$T/bad.sock" -P "$T/bad.pid" eval \
  get_size="echo $((32 * MIB))" can_write='exit 0' can_flush='exit 0' flush='exit 0' \
  pread="if [ -e $T/badsector ] && [ \$4 -lt 65536 ]; then echo 'EIO bad sector' >&2; exit 1; fi
         dd if=$T/bad.img skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
  pwrite="dd of=$T/bad.img seek=\$4 conv=notrunc oflag=seek_bytes status=none
          if [ \$4 -lt 65536 ]; then rm -f $T/badsector; fi" \
  >>"$T/bad.log" 2>&1 || fail "nbdkit did not start"
for _ in $(seq 1 100); do [ -s "$T/bad.pid" ] && break; sleep 0.05; done
PIDS+=("$(cat "$T/bad.pid")")
bm label -n -b prefer m0 "nbd+unix:///?socket=$T/bad.sock" "$T/a"  # prefer: bad reads first
serve m0 --readahead 0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x55 0 64k' -c flush >/dev/null
touch "$T/badsector"
qemu-io -f raw "$u" -c 'read -P 0x55 0 64k' >"$T/qio" 2>&1 || { cat "$T/qio"; fail "read failed"; }
grep -qiE 'error|fail|mismatch' "$T/qio" && { cat "$T/qio"; fail "client saw the read error"; }
for _ in $(seq 1 50); do [ -e "$T/badsector" ] || break; sleep 0.1; done
[ -e "$T/badsector" ] && fail "the bad range was not rewritten"
# the rewrite is read back before it is logged: wait for the line
for _ in $(seq 1 50); do
  grep -q "rewritten from a good copy (1 so far)" "$T/m0.log" && break
  sleep 0.1
done
grep -q "rewritten from a good copy (1 so far)" "$T/m0.log" || { cat "$T/m0.log"; fail "no rewrite logged"; }
out=$(bm status m0) || fail "not COMPLETE after a mended read error: $out"
stop m0
cmp -n $((31 * MIB)) "$T/a" "$T/bad.img" || fail "copies differ after the rewrite"
