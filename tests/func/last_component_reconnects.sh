# The last ACTIVE component is an NBD export whose server restarts: its
# requests fail while it is away (a lone disk's errors), and once its
# server answers again with the label this server last wrote there, it is
# connected again in place and serves, without a restart of the mirror.
# Before, every request failed until the mirror was restarted.  An older
# copy put back at its place (another history) is not taken.
. "$(dirname "$0")/lib.sh"
need qemu-io
truncate -s 64M "$T/b.img"
filedisk b "$T/b.img"
B=$(disk_uri b)
bm label -n m0 "$B" >/dev/null
serve m0 --io-timeout 2
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x41 0 1M' >/dev/null || fail "first write"
disk_kill b
sleep 0.5
rc=0; qemu-io -f raw "$u" -c 'read -P 0x41 0 4k' >"$T/r.out" 2>&1 || rc=$?
has -E "Input/output error|failed" "$T/r.out" || fail "a read while b is away did not fail: $(cat "$T/r.out")"
filedisk b "$T/b.img"
ok=
for _ in $(seq 1 100); do
  if qemu-io -f raw "$u" -c 'read -P 0x41 0 1M' >"$T/r.out" 2>&1 &&
     ! has "Pattern verification failed" "$T/r.out"; then ok=1; break; fi
  sleep 0.2
done
[ -n "$ok" ] || fail "m0 did not serve again after b's server came back: $(cat "$T/r.out"; tail -5 "$T/m0.log")"
has "connected again" "$T/m0.log" || fail "the log does not say it connected again: $(tail -5 "$T/m0.log")"
qemu-io -f raw "$u" -c 'write -P 0x42 1M 1M' -c 'read -P 0x42 1M 1M' >"$T/w.out" 2>&1 || fail "write after: $(cat "$T/w.out")"
has "Pattern verification failed" "$T/w.out" && fail "read back after: $(cat "$T/w.out")"
bm status m0 | has "b.disk.sock (ACTIVE" || fail "b: $(bm status m0)"
# an older copy of b put back: not taken (its label is older)
cp "$T/b.img" "$T/b.old"
qemu-io -f raw "$u" -c 'write -P 0x43 2M 1M' >/dev/null || fail "write"
sleep 3   # the idle clean writes b's label: the old copy is now behind
disk_kill b
cp "$T/b.old" "$T/b.img"
filedisk b "$T/b.img"
for _ in $(seq 1 50); do has "not taken" "$T/m0.log" && break; sleep 0.2; done
has "not taken: it came back with another history" "$T/m0.log" || fail "the older copy: $(tail -5 "$T/m0.log")"
rc=0; qemu-io -f raw "$u" -c 'read 0 4k' >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "m0 served from the older copy"
"$BLKMIRROR" stop -f m0 >/dev/null 2>&1 || true  # (dirty: b is away)
