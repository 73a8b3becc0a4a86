# qemu-io patterns: aligned and unaligned writes, FUA, flush, discard,
# write-zeroes; each read back with -P, then the components compared.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 20 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
u=$(uri m0)
q() { qemu-io -f raw "$u" "$@" >"$T/qio.out" 2>&1 || { cat "$T/qio.out"; fail "qemu-io $*"; }
      ! grep -qiE 'error|fail|mismatch' "$T/qio.out" || { cat "$T/qio.out"; fail "qemu-io $*"; }; }
q -c 'write -P 0xa1 0 1M' -c 'read -P 0xa1 0 1M'
q -c 'write -P 0xb2 4097 1000' -c 'read -P 0xb2 4097 1000' -c 'read -P 0xa1 0 4097' -c 'read -P 0xa1 5097 1000'
q -c 'write -f -P 0xc3 2M 64k' -c 'flush' -c 'read -P 0xc3 2M 64k'
q -c 'write -P 0xd4 3M 1M' -c 'discard 3M 512k' -c 'read -P 0 3M 512k' -c 'read -P 0xd4 3584k 512k'
q -c 'write -P 0xe5 5M 1M' -c 'write -z 5M 256k' -c 'read -P 0 5M 256k' -c 'read -P 0xe5 5376k 768k'
q -c 'write -P 0xf6 18M 1M' -c 'read -P 0xf6 18M 1M'
# Beyond the end: refused, nothing crashes.
qemu-io -f raw "$u" -c 'read 18M 2M' >"$T/qio.out" 2>&1 || true
grep -qiE 'error|invalid|out of|beyond|request' "$T/qio.out" || { cat "$T/qio.out"; fail "out-of-range read not refused"; }
stop m0
same_data "$T/a" "$T/b"
