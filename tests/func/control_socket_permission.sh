# A user who may not open the control socket of a running mirror is told
# so ("Permission denied"), not that the mirror is not running.
. "$(dirname "$0")/lib.sh"
need setpriv
[ "$(id -u)" -eq 0 ] || skip "needs root (to run the CLI as another user)"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
chmod 755 "$T" "$T/state"
chmod 644 "$T/state/m0.components"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$BLKMIRROR" "$@"; }
expect_error "m0: permission denied" as_nobody status m0
expect_error "m0: permission denied" as_nobody list m0
bm status m0 >/dev/null || fail "root cannot call the mirror"
stop m0
