# serve --socket never destroys what is at the path: a data file given by
# mistake, a component of the mirror itself, the live socket of another
# running mirror are refused with one line naming what is there, and the
# thing survives.  A stale socket (its server gone) is reused, and a server
# removes only the socket it created.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b c d
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"

# A data file given as the socket path.
head -c 100000 /dev/urandom >"$T/data"
sum=$(sha256sum <"$T/data")
expect_error "$T/data is a regular file" bm serve m0 --socket "$T/data"
[ "$(sha256sum <"$T/data")" = "$sum" ] || fail "the data file changed"
# The mirror's own component.
before=$(sha256sum <"$T/a")
expect_error "$T/a is a regular file" bm serve m0 --socket "$T/a"
[ "$(sha256sum <"$T/a")" = "$before" ] || fail "component a changed"
bm dump "$T/a" | has "Name: m0" || fail "component a lost its label"
mkdir "$T/dir"
expect_error "$T/dir is a directory" bm serve m0 --socket "$T/dir"
[ -d "$T/dir" ] || fail "the directory went away"
# None of the refused attempts left the mirror running.
rc=0; bm status m0 >/dev/null || rc=$?
[ $rc -eq 3 ] || fail "m0 not stopped after refused serves (status $rc)"

# The live socket of another running mirror.
serve m1
ino=$(stat -c %i "$T/m1.sock")
expect_error "$T/m1.sock is the live socket of another server" \
  bm serve m0 --socket "$T/m1.sock"
[ "$(stat -c %i "$T/m1.sock")" = "$ino" ] || fail "m1's socket was replaced"
qemu-io -f raw "$(uri m1)" -c 'write -P 0x11 0 4k' >/dev/null || fail "m1 not serving"
bm status m1 | has COMPLETE || fail "m1 not COMPLETE"
# A control socket's path (NAME.ctl in the state directory): m1's, live,
# and m0's own (before, m0 listened there and then refused its own
# control socket as "the live socket of another server").
for ctl in m1 m0; do
  expect_error "$BLKMIRROR_STATE_DIR/$ctl.ctl is in the state directory" \
    bm serve m0 --socket "$BLKMIRROR_STATE_DIR/$ctl.ctl"
done
bm status m1 | has COMPLETE || fail "m1's control socket does not answer"
rc=0; bm status m0 >/dev/null || rc=$?
[ $rc -eq 3 ] || fail "m0 started on a control socket's path (status $rc)"

# A stale socket: its server was killed, nothing listens on it.
kill -9 "$(server_pid m1)"
wait "$(server_pid m1)" 2>/dev/null || true
[ -S "$T/m1.sock" ] || fail "test setup: no stale socket left by the killed server"
serve m1
qemu-io -f raw "$(uri m1)" -c 'read -P 0x11 0 4k' >/dev/null || fail "stale socket not reused"

# A server removes only its own socket: if the path was replaced under it
# (here by a plain file), it is left alone at stop.
mv "$T/m1.sock" "$T/m1.moved"
echo keep >"$T/m1.sock"
stop m1
[ "$(cat "$T/m1.sock")" = keep ] || fail "stop removed a file it did not create"
