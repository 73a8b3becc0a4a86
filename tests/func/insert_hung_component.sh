# insert never waits for ever on a component that hangs: the new one (an
# NBD export that negotiates and then answers nothing), or one already in
# the mirror (the check that the new disk is not one of them reads and
# writes a block through each).  Each is refused within a few io-timeouts
# saying what did not answer, and the server still stops.  Before, insert
# hung (its label read and that check had no deadline), and since the
# stop waits for the insert, neither stop -f nor SIGTERM ended the server.
. "$(dirname "$0")/lib.sh"
need nbdkit
mkimg 64 a b c
# the new component hangs
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0 --io-timeout 2
hangdisk h 64
hang h
t0=$(date +%s)
rc=0; out=$(timeout 30 "$BLKMIRROR" insert m0 "$(disk_uri h)" 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "insert of a hung disk: exit $rc after $(( $(date +%s) - t0 )) s (want 1): $out"
grep -q "timed out" <<<"$out" || fail "insert did not say what timed out: $out"
[ $(( $(date +%s) - t0 )) -le 20 ] || fail "insert took $(( $(date +%s) - t0 )) s"
echo "new one hangs: $out" >&2
answer h
stop m0
disk_kill h
# a component already in the mirror hangs (the mirror idle: no client
# request for the watchdog to judge)
hangdisk g 64
bm label -n m1 "$T/c" "$(disk_uri g)" >/dev/null
serve m1 --io-timeout 2
wait_complete m1
disk n 64M
hang g
t0=$(date +%s)
rc=0; out=$(timeout 30 "$BLKMIRROR" insert m1 "$(disk_uri n)" 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "insert beside a hung component: exit $rc after $(( $(date +%s) - t0 )) s (want 1): $out"
grep -q "timed out" <<<"$out" || fail "insert did not say what timed out: $out"
echo "old one hangs: $out" >&2
answer g
stop m1
disk_kill n
# the new one answers its label read but hangs on the look for a file
# system (the first and last MiB read through it: here at 0)
hangdisk p 64 0
serve m1 --io-timeout 2
wait_complete m1
hang p
t0=$(date +%s)
rc=0; out=$(timeout 30 "$BLKMIRROR" insert m1 "$(disk_uri p)" 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "insert of a disk that hangs on the content probe: exit $rc after $(( $(date +%s) - t0 )) s (want 1): $out"
has "look for existing data: Connection timed out" <<<"$out" || fail "insert did not say what timed out: $out"
echo "new one hangs on the probe: $out" >&2
answer p
stop m1
