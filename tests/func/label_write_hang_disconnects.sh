# Two faults at once: one component fails writes (EIO: the label write
# that marks the mirror dirty) while another has stopped answering.
# Recording the failure writes the labels of the others, and the hung one's label write times out (io-timeout 2 s): that
# component did not answer, so it is DISCONNECTED (reconnected and copied
# when it answers), not FAILED for good (before: "cannot write its label"
# left it FAILED until an administrator acted, in faults_under_load on a
# busy machine).  The client's write is acknowledged from the copy left.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
disk e 65M --filter=error error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file="$T/err"
hangdisk h 65
bm label -n m0 "$T/a" "$(disk_uri e)" "$(disk_uri h)"
serve m0 --io-timeout 2
u=$(uri m0)
hang h
touch "$T/err"
timeout 30 qemu-io -f raw "$u" -c 'write -P 0x44 1M 64k' >"$T/w.out" 2>&1 ||
  { cat "$T/w.out"; fail "the write failed with a copy left"; }
grep -qiE 'error|fail' "$T/w.out" && { cat "$T/w.out"; fail "client saw an error"; }
out=$(bm status m0) && fail "status exited 0: $out"
grep -q "$(disk_uri e) (FAILED: " <<<"$out" || fail "e not FAILED by its write errors: $out"
grep -q "$(disk_uri h) (DISCONNECTED: " <<<"$out" || fail "h not DISCONNECTED: $out"
answer h
wait_status m0 "$(disk_uri h) (ACTIVE)"
qemu-io -f raw -r "$u" -c 'read -P 0x44 1M 64k' >/dev/null || fail "the acknowledged write is not there"
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/h.img" || fail "a and h differ after h came back"
