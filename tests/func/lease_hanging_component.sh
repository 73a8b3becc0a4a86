# A component that hangs (hangdisk in lib.sh) holds only its own lease
# renewal, for the lease I/O deadline (5 s), which is logged; the other
# component's lease keeps moving every second, so a second server is still
# refused; once the component answers again its lease is renewed again.
. "$(dirname "$0")/lib.sh"
disk d0 64M
hangdisk d1 64
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
lt() { "$TEST_TOOLS/lease_tool" "$@"; }
seq_of() { lt dump "$(disk_uri "$1")" | sed -n 's/.*seq=\([0-9]*\).*/\1/p'; }
hang d1
s0=$(seq_of d0)
for _ in $(seq 1 200); do
  grep -q "d1.disk.sock: cannot \(read\|write\) its lease: Connection timed out" "$T/m0.log" && break
  sleep 0.1
done
grep -q "d1.disk.sock: cannot \(read\|write\) its lease: Connection timed out" "$T/m0.log" ||
  fail "the hanging component's lease I/O did not time out: $(cat "$T/m0.log")"
s1=$(seq_of d0)
echo "d0's lease moved $s0 -> $s1 while d1 hung"
[ "$s1" -ge $((s0 + 3)) ] || fail "d0's lease did not keep moving while d1 hung ($s0 -> $s1)"
mkdir -p "$T/state2"
echo "$(disk_uri d0)" >"$T/state2/m0.components"
expect_error "d0.disk.sock is served by another blkmirror \(host $(hostname), pid $(server_pid m0)" \
  timeout 20 env BLKMIRROR_STATE_DIR="$T/state2" "$BLKMIRROR" serve m0 --socket "$T/second.sock"
answer d1
for _ in $(seq 1 200); do
  grep -q "d1.disk.sock: its lease is renewed again" "$T/m0.log" && break
  sleep 0.1
done
grep -q "d1.disk.sock: its lease is renewed again" "$T/m0.log" || fail "d1's lease not renewed after resume"
stop m0
lt dump "$(disk_uri d1)" | has "^state=clean" || fail "d1's lease not clean after stop"
