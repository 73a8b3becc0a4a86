# clear and configure of components that another server (another state
# directory, as on another host) serves are refused, naming the holder,
# and change nothing; after that server stops, clear removes the lease
# with the label.
. "$(dirname "$0")/lib.sh"
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
holder=$(server_pid m0)
mkdir -p "$T/state2"
cp "$BLKMIRROR_STATE_DIR/m0.components" "$T/state2/"
s2() { timeout 20 env BLKMIRROR_STATE_DIR="$T/state2" "$BLKMIRROR" "$@"; }
expect_error "d0.disk.sock is served by another blkmirror \(host $(hostname), pid $holder, mirror 'm0'\)" \
  s2 clear "$(disk_uri d0)"
expect_error "d0.disk.sock is served by another blkmirror \(host $(hostname), pid $holder, mirror 'm0'\)" \
  s2 configure -b prefer m0
bm dump "$(disk_uri d0)" | has "Name: m0" || fail "the label was cleared"
bm dump "$(disk_uri d0)" | has "Balance: prefer" && fail "the label was configured"
bm status m0 | has COMPLETE || fail "the server was disturbed: $(bm status m0)"
stop m0
s2 clear "$(disk_uri d0)" >/dev/null
"$TEST_TOOLS/lease_tool" dump "$(disk_uri d0)" | has -x none || fail "clear left the lease"
