# An NBD component that comes back taking only 4 KiB-aligned requests
# (its server now advertises a minimum block size of 4096) to a mirror
# whose clients were told that any alignment works is refused, with the
# reason in status, and stays out of service: the clients' 512-byte
# writes go on working.  Before, it rejoined and was failed out by the
# first such write.  Both ways back are covered: a component absent since
# the start (bm_live_rejoin) and one disconnected while serving
# (recover.c).  Served again without the minimum, it comes back.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdinfo
mkimg 32 a r.img
filedisk r "$T/r.img"
ruri=$(disk_uri r)
bm label -n m0 "$T/a" "$ruri"
disk_kill r
serve m0
grep -q "block_size_minimum: 1$" <<<"$(nbdinfo "$(uri m0)")" ||
  fail "the mirror does not tell minimum 1: $(nbdinfo "$(uri m0)" | grep block_size)"
strict_r() {  # r served with a minimum block size of 4096
  rm -f "$T/r.disk.sock" "$T/r.disk.pid"
  nbdkit -U "$T/r.disk.sock" -P "$T/r.disk.pid" --filter=blocksize-policy file "$T/r.img" \
    blocksize-minimum=4096 blocksize-error-policy=error >>"$T/r.disk.log" 2>&1 ||
    fail "nbdkit for r did not start"
  for _ in $(seq 1 100); do [ -s "$T/r.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/r.disk.pid")")
}
refused() {  # $1: the state r stays in
  local out
  wait_status m0 "r.disk.sock ($1: .*minimum block size" 40
  grep -q "r.disk.sock ($1: it came back taking only requests aligned to 4096 bytes" <<<"$status_out" ||
    fail "r not refused with the reason: $status_out"
  out=$(qemu-io -f raw "$(uri m0)" -c "write -P 0x$2 512 512" -c "read -P 0x$2 512 512" 2>&1) ||
    fail "a 512-byte write failed: $out"
  grep -q failed <<<"$out" && fail "qemu-io: $out"
  out=$(bm status m0 2>/dev/null) || true
  grep -q "$T/a (ACTIVE)" <<<"$out" || fail "a left service: $out"
  grep -q "r.disk.sock ($1: " <<<"$out" || fail "r is not $1 after a 512-byte write: $out"
}
# absent since the start
strict_r
refused ABSENT 11
disk_kill r
filedisk r "$T/r.img"
wait_complete m0
# disconnected while serving
disk_kill r
strict_r
refused DISCONNECTED 22
disk_kill r
filedisk r "$T/r.img"
wait_complete m0
qemu-io -f raw -r "$(uri m0)" -c 'read -P 0x22 512 512' >/dev/null || fail "data lost"
stop m0
cmp -n $((31 * MIB)) "$T/a" "$T/r.img" || fail "a and r differ"
