# The thread-pool fallback (no io_uring) serves the same data.
. "$(dirname "$0")/lib.sh"
need nbdcopy
mkimg 24 a b
bm label m0 "$T/a" "$T/b"
export BLKMIRROR_NO_IO_URING=1
serve m0
wait_complete m0
head -c $((23 * MIB)) /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)"
nbdcopy "$(uri m0)" "$T/back"
cmp "$T/data" "$T/back" || fail "read back differs"
stop m0
same_data "$T/a" "$T/b"
