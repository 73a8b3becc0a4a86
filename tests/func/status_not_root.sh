# A user who cannot open a running mirror's control socket (mode 0600,
# root's) is told so, exit 1; status never says STOPPED for a running
# mirror and never opens its components.
. "$(dirname "$0")/lib.sh"
command -v runuser >/dev/null || skip "runuser is not installed"
[ "$(id -u)" -eq 0 ] || skip "needs root (to run as nobody)"
mkimg 16 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
chmod 755 "$T" "$BLKMIRROR_STATE_DIR"
# The binary must be reachable by nobody.
runuser -u nobody -- test -x "$BLKMIRROR" || skip "$BLKMIRROR is not reachable by nobody"
as_nobody() { runuser -u nobody -- env BLKMIRROR_STATE_DIR="$BLKMIRROR_STATE_DIR" "$BLKMIRROR" "$@"; }
expect_error "m0: permission denied on its control socket .*m0.ctl .*pid $(server_pid m0).*root" as_nobody status m0
expect_error "permission denied on its control socket" as_nobody status
expect_error "permission denied on its control socket" as_nobody list m0
expect_error "permission denied on its control socket" as_nobody stop m0
kill -0 "$(server_pid m0)" || fail "the server stopped"
stop m0
