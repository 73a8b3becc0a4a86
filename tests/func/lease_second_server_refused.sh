# Scenario 28: a second server (another state directory, as on another
# host) serving the same NBD exports is refused within seconds, with one
# line naming the holder's host and pid; it writes nothing, and the first
# server keeps serving the right data.
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
holder=$(server_pid m0)
lt() { "$TEST_TOOLS/lease_tool" "$@"; }
lt dump "$(disk_uri d0)" | has "state=active .*pid=$holder host=$(hostname) mirror=m0" ||
  fail "no active lease of the server on d0: $(lt dump "$(disk_uri d0)")"
# who holds it (the holder's renewals move seq, and interval: it promises
# 1 s plus twice its last renewal's I/O time, 1010 ms on a busy machine)
holder_of() { lt dump "$(disk_uri "$1")" | sed 's/ seq=[0-9]*//; s/ interval=[0-9]*//'; }
before0=$(holder_of d0)
mkdir -p "$T/state2"
cp "$BLKMIRROR_STATE_DIR/m0.components" "$T/state2/"
t0=$(date +%s%N)
expect_error "m0.*d[01].disk.sock is served by another blkmirror \(host $(hostname), pid $holder, mirror 'm0'\)" \
  timeout 20 env BLKMIRROR_STATE_DIR="$T/state2" "$BLKMIRROR" serve m0 --socket "$T/second.sock"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "refused after $ms ms"
[ "$ms" -lt 8000 ] || fail "refusal took $ms ms"
# the second server wrote no lease of its own
after0=$(holder_of d0)
[ "$before0" = "$after0" ] || fail "d0's lease changed owner: $before0 -> $after0"
lt dump "$(disk_uri d1)" | has "pid=$holder " || fail "d1's lease is not the holder's"
# the first server still serves, and serves the right data
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 1M 64k' -c flush >/dev/null
qemu-io -f raw "$(uri m0)" -c 'read -P 0x5a 1M 64k' | has "read 65536" || fail "read back differs"
bm status m0 | has COMPLETE || fail "mirror not COMPLETE: $(bm status m0)"
for d in d0 d1; do
  qemu-io -f raw "$(disk_uri $d)" -c 'read -P 0x5a 1M 64k' | has "read 65536" ||
    fail "$d does not hold the write"
done
stop m0
lt dump "$(disk_uri d0)" | has "state=clean" || fail "lease not clean after stop"
