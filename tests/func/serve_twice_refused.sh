# A second serve of a running mirror is refused naming the pid of the
# first, and changes nothing: the first keeps its socket and serves on.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
pid=$(server_pid m0)
expect_error "mirror 'm0' is already being served by pid $pid" \
  bm serve m0 --socket "$T/other.sock"
[ ! -e "$T/other.sock" ] || fail "the refused serve created its socket"
expect_error "already being served by pid $pid" bm serve m0 --socket "$T/m0.sock"
[ -S "$T/m0.sock" ] || fail "the first server lost its socket"
qemu-io -f raw "$(uri m0)" -c 'write -P 7 0 4k' >/dev/null || fail "first server not serving"
stop m0
