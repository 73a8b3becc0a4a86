# Labels written by a blkmirror of label version 1 (no last-write time, no
# member records) still assemble by the genid/syncid rule: a stale one is
# copied over, never the source; the labels are rewritten as the current version (4).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
# Turn both labels into version 1 ones: version 1, bytes 256..400 zero,
# crc32c over the first 508 bytes recomputed.
to_v1() {
  $PY - "$1" <<'PYEOF'
import os, struct, sys
path = sys.argv[1]
size = os.path.getsize(path) // 4096 * 4096
with open(path, "r+b") as f:
    f.seek(size - 4096)
    b = bytearray(f.read(512))
    b[16:20] = struct.pack("<I", 1)
    b[256:408] = bytes(152)
    crc = 0xffffffff
    for x in b[:508]:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    b[508:512] = struct.pack("<I", crc ^ 0xffffffff)
    f.seek(size - 4096)
    f.write(b)
PYEOF
}
to_v1 "$T/a"
to_v1 "$T/b"
bm dump "$T/a" | has "Version: 1" || fail "a is not a version 1 label: $(bm dump "$T/a")"
# b missed a write (a higher syncid on a), in version 1 terms
mv "$T/b" "$T/b.away"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x77 0 1M' >/dev/null
stop m0
mv "$T/b.away" "$T/b"
bm dump "$T/b" | has "Version: 1" || fail "b's label changed while it was away"
serve m0
out=$(qemu-io -f raw "$(uri m0)" -c 'read -P 0x77 0 1M') || true
grep -q "^read 1048576" <<<"$out" || fail "the stale version 1 component was read: $out"
wait_complete m0
stop m0
same_data "$T/a" "$T/b"
for c in a b; do
  bm dump "$T/$c" | has "Version: 4" || fail "$c not rewritten as version 4: $(bm dump "$T/$c")"
done
