# Two servers (two state directories, as on two hosts) start the same
# mirror of NBD exports at the same moment: both check the leases before
# either writes its own (held there by a test hook, BM_TEST_LEASE_PAUSE),
# then both write at once.  Exactly one serves: the one whose lease was
# written last; the other reads the leases back, finds the other's, says
# so and exits without serving, leaving the winner's leases alone.  (The
# version without the read-back served from both until the first renewal,
# a second later, found the conflict: both could write meanwhile.)
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
mkdir -p "$T/state2"
cp "$BLKMIRROR_STATE_DIR/m0.components" "$T/state2/"
lt() { "$TEST_TOOLS/lease_tool" "$@"; }
BM_TEST_LEASE_PAUSE="$T/pa" "$BLKMIRROR" serve m0 --socket "$T/a.sock" >"$T/a.log" 2>&1 &
pa=$!; PIDS+=("$pa")
BM_TEST_LEASE_PAUSE="$T/pb" BLKMIRROR_STATE_DIR="$T/state2" \
  "$BLKMIRROR" serve m0 --socket "$T/b.sock" >"$T/b.log" 2>&1 &
pb=$!; PIDS+=("$pb")
for _ in $(seq 1 200); do
  [ -e "$T/pa.checked" ] && [ -e "$T/pb.checked" ] && break
  sleep 0.05
done
[ -e "$T/pa.checked" ] && [ -e "$T/pb.checked" ] ||
  fail "the servers did not both check the leases: $(cat "$T/a.log" "$T/b.log")"
touch "$T/pa.go" "$T/pb.go"
# one of them exits (refused) within a few seconds; the other serves
for _ in $(seq 1 200); do
  kill -0 "$pa" 2>/dev/null && kill -0 "$pb" 2>/dev/null || break
  sleep 0.05
done
if ! kill -0 "$pa" 2>/dev/null; then
  loser=a winner=b wpid=$pb; wait "$pa" && fail "server a exited 0"
elif ! kill -0 "$pb" 2>/dev/null; then
  loser=b winner=a wpid=$pa; wait "$pb" && fail "server b exited 0"
else
  fail "both servers serve: $(cat "$T/a.log" "$T/b.log")"
fi
echo "server $winner serves, server $loser refused" >&2
grep -q "was taken by another server at the same moment (host $(hostname), pid $wpid" "$T/$loser.log" ||
  fail "server $loser does not say why: $(cat "$T/$loser.log")"
grep -q "serving mirror 'm0'" "$T/$loser.log" && fail "server $loser served before it gave up"
for d in d0 d1; do
  lt dump "$(disk_uri $d)" | has "state=active .*pid=$wpid " ||
    fail "$d's lease is not the winner's: $(lt dump "$(disk_uri $d)")"
done
for _ in $(seq 1 100); do [ -S "$T/$winner.sock" ] && break; sleep 0.05; done
u="nbd+unix:///m0?socket=$T/$winner.sock"
qemu-io -f raw "$u" -c 'write -P 0x5a 1M 64k' -c flush >/dev/null || fail "the winner does not serve"
qemu-io -f raw -r "$u" -c 'read -P 0x5a 1M 64k' | has "read 65536" || fail "read back differs"
sleep 1.5 # a renewal: still the winner's, nothing lost
grep -qi "lost\|another" "$T/$winner.log" && fail "the winner lost a lease: $(cat "$T/$winner.log")"
kill "$wpid"; wait "$wpid" || fail "the winner did not stop cleanly"
