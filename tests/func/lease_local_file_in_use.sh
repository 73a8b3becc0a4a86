# A file that a running server holds (its local lock) cannot be served by a
# second server, even from another state directory that lists only that
# component: it is refused with one line naming the holder from its lease.
. "$(dirname "$0")/lib.sh"
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
mkdir -p "$T/state2"
echo "$T/b" >"$T/state2/m0.components"
expect_error "m0.*/b is served by another blkmirror on this host \(host $(hostname), pid $(server_pid m0), mirror 'm0'\)" \
  timeout 20 env BLKMIRROR_STATE_DIR="$T/state2" "$BLKMIRROR" serve m0 --socket "$T/second.sock"
bm status m0 | has COMPLETE || fail "first server disturbed: $(bm status m0)"
stop m0
