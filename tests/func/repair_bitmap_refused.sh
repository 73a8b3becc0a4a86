# `repair` records the span it rewrites in the bitmap before it writes a
# byte; when no component takes that bitmap write (EIO on both), the
# repair stops there with the reason and rewrites nothing: the differing
# copy is left as it was (a rewrite without its mark, cut by a crash,
# would be a half-repaired copy no resync looks at), and the server goes
# on serving.
. "$(dirname "$0")/lib.sh"
need qemu-io
faildisk x 17
faildisk y 17
bm label -n -r 1M m0 "$(disk_uri x)" "$(disk_uri y)"
blk=$(bitmap_block "$(disk_uri y)")
serve m0
head -c 8192 /dev/urandom | dd of="$T/y.img" bs=4096 seek=$((5 * 256 + 7)) conv=notrunc status=none
dd if="$T/y.img" of="$T/y.before" bs=1M count=16 status=none
: >"$T/x.writes"; : >"$T/y.writes"
fail_writes x "$blk"
fail_writes y "$blk"
rc=0; out=$(bm repair m0 2>&1) || rc=$?
[ $rc -ne 0 ] || fail "repair succeeded without its bits: $out"
# stopped at region 5's chunk, which it says it did not repair
grep -q "repair of 'm0' failed at $((5 * MIB)) of $((16 * MIB)) bytes: cannot record the repair at offset $((5 * MIB)) in the bitmap" <<<"$out" ||
  fail "repair said: $out"
grep -q "offset $((5 * MIB + 7 * 4096)) length 8192: .*y.disk.sock differs from .*x.disk.sock, not repaired$" <<<"$out" ||
  fail "repair did not say what it left: $out"
has -q "repaired offset" <<<"$out" && fail "repair claims a rewrite: $out"
# (the labels record the component the failed bitmap write dropped: the
# metadata at the end, past the 16 MiB of data)
for d in x y; do
  data=$(awk -v end=$((16 * MIB)) '$1 < end' "$T/$d.writes")
  [ -z "$data" ] || fail "data written to $d without its mark: $data"
done
cmp -n $((16 * MIB)) "$T/y.img" "$T/y.before" || fail "y's differing copy was rewritten"
# still served: the reference copy reads back
take_writes x; take_writes y
timeout 20 qemu-io -f raw "$(uri m0)" -c 'read 0 64k' >/dev/null || fail "the mirror stopped serving"
echo ok
