# The last ACTIVE component is an NBD export whose server restarts: its
# requests fail while it is away (a lone disk's errors), and once its
# server answers again with the label this server last wrote there, it is
# connected again in place and serves, without a restart of the mirror.
# Before, every request failed until the mirror was restarted.  An older
# copy put back at its place (another history) is not taken.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdsh
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
# writes meanwhile fail too, each trying (and failing) to mark the labels
# dirty: b's label stays the last one that landed, and is taken back
for i in 1 2 3; do
  qemu-io -f raw "$u" -c "write -P 0x4$i 4M 4k" >/dev/null 2>&1 &&
    fail "a write while b is away succeeded"
done
# status says so (before: "COMPLETE", b ACTIVE without a word)
rc=0; st=$(bm status m0) || rc=$?
[ $rc -eq 2 ] || fail "status exited $rc while the only component is away: $st"
has "m0 *DEGRADED" <<<"$st" || fail "status: $st"
has -E "b.disk.sock \(ACTIVE: its connection is gone \(.*\); connecting again when its server answers(; last try [0-9]+ s ago: .*)?\)" <<<"$st" ||
  fail "status does not say why: $st"
lst=$(bm list m0)
has "Reason: its connection is gone" <<<"$lst" || fail "list: $lst"
has "State: DEGRADED" <<<"$lst" || fail "list says the mirror is not DEGRADED: $lst"
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
st=$(bm status m0) || fail "status after the reconnect: $st"
has "m0 *COMPLETE *.*b.disk.sock (ACTIVE)" <<<"$st" || fail "b: $st"
# an older copy of b put back: not taken (its label is older)
cp "$T/b.img" "$T/b.old"
qemu-io -f raw "$u" -c 'write -P 0x43 2M 1M' >/dev/null || fail "write"
sleep 3   # the idle clean writes b's label: the old copy is now behind
disk_kill b
cp "$T/b.old" "$T/b.img"
filedisk b "$T/b.img"
for _ in $(seq 1 50); do has "not taken" "$T/m0.log" && break; sleep 0.2; done
has "not taken: it came back with an older label" "$T/m0.log" || fail "the older copy: $(tail -5 "$T/m0.log")"
st=$(bm status m0) || true
has "b.disk.sock (ACTIVE: its connection was gone; its server answers again, but it is not taken: it came back with an older label" <<<"$st" ||
  fail "status does not say why b is not taken: $st"
rc=0; qemu-io -f raw "$u" -c 'read 0 4k' >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "m0 served from the older copy"
"$BLKMIRROR" stop -f m0 >/dev/null 2>&1 || true  # (dirty: b is away)
# a server with a volatile cache that dies holding an acknowledged write
# not flushed: after the reconnect the next client flush fails (it cannot
# vouch for that write), the one after succeeds (before: it succeeded,
# and the write was gone)
disk_kill b
truncate -s 64M "$T/c.img"
filedisk c "$T/c.img" --filter=cache cache=writeback cache-on-read=false
C=$(disk_uri c)
bm label -n m1 "$C" >/dev/null
serve m1 --io-timeout 2
u1=$(uri m1)
qemu-io -f raw "$u1" -c 'write -P 0x51 0 1M' -c flush >/dev/null || fail "m1 first write"
# a write made durable by the idle clean's flush (no client flush): after
# a reconnect the next flush succeeds (nothing was lost)
nbdsh -u "$u1" -c 'h.pwrite(b"\x51" * 4096, 2 * 1048576)' || fail "m1 write"
sleep 3   # idle: the clean label written and every component flushed
disk_kill c
sleep 0.5
filedisk c "$T/c.img" --filter=cache cache=writeback cache-on-read=false
for _ in $(seq 1 100); do has "connected again" "$T/m1.log" && break; sleep 0.1; done
has "connected again" "$T/m1.log" || fail "c not connected again: $(tail -5 "$T/m1.log")"
qemu-io -f raw "$u1" -c flush >"$T/f0.out" 2>&1 || fail "a flush after a reconnect with nothing lost failed: $(cat "$T/f0.out")"
has "held writes not flushed" "$T/m1.log" && fail "the idle clean's flush was not counted"
: >"$T/m1.log"
# (nbdsh: no flush at its exit, as qemu-io does)
nbdsh -u "$u1" -c 'h.pwrite(b"\x52" * 1048576, 0)' || fail "m1 second write"
disk_kill c
sleep 0.5
filedisk c "$T/c.img" --filter=cache cache=writeback cache-on-read=false
for _ in $(seq 1 100); do has "connected again" "$T/m1.log" && break; sleep 0.1; done
has "connected again" "$T/m1.log" || fail "c not connected again: $(tail -5 "$T/m1.log")"
has "held writes not flushed when its connection died" "$T/m1.log" || fail "the unflushed write went unnoticed"
qemu-io -f raw "$u1" -c flush >"$T/f1.out" 2>&1 && fail "the first flush after the reconnect succeeded"
qemu-io -f raw "$u1" -c flush >"$T/f2.out" 2>&1 || fail "the second flush failed: $(cat "$T/f2.out")"
"$BLKMIRROR" stop m1 >/dev/null 2>&1 || true
