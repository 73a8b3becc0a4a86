# assemble records a mirror that the state directory no longer knows
# (forget -f; or disks moved from another host: a fresh state directory)
# from its components' labels, writing nothing on them; serve then starts
# it with its data and its history (the component that missed writes is
# still the one copied).  Before, nothing took such components back:
# label refused them as members of that mirror, label -f made a new
# mirror of them and lost which copy was newer.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x61 1M 64k' >/dev/null || fail "write"
bm deactivate m0 "$T/b" >/dev/null || fail "deactivate b"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x62 2M 64k' >/dev/null || fail "write while b is out"
stop m0
bm forget -f m0 >/dev/null || fail "forget -f"
expect_error "no mirror named 'm0'" bm status m0
sum_before=$(md5sum "$T/a" "$T/b")

out=$(bm assemble m0 "$T/a" "$T/b") || fail "assemble: $out"
has "m0: recorded with 2 components from their labels; start it with 'blkmirror serve m0'" <<<"$out" ||
  fail "assemble said: $out"
[ "$(md5sum "$T/a" "$T/b")" = "$sum_before" ] || fail "assemble wrote on a component"
out=$(bm status m0) || true
has "$T/b (inactive" <<<"$out" || fail "b's history was lost (status: $out)"
expect_error "mirror 'm0' is already recorded; 'blkmirror status m0' shows it" bm assemble m0 "$T/a" "$T/b"
serve m0
bm activate --wait m0 "$T/b" >/dev/null || fail "activate b"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x61 1M 64k' -c 'read -P 0x62 2M 64k' >"$T/read.out" 2>&1 ||
  fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
stop m0
cmp -n $((16 * MIB)) "$T/a" "$T/b" || fail "b was not brought up to date"

# a fresh state directory (the disks moved to another host): the same
export BLKMIRROR_STATE_DIR=$T/otherhost
mkdir -p "$BLKMIRROR_STATE_DIR"
expect_error "no mirror named 'm0'" bm status m0
bm assemble m0 "$T/b" "$T/a" >/dev/null || fail "assemble on the other host"
serve m0
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x62 2M 64k' >"$T/read.out" 2>&1 || fail "read on the other host"
has "Pattern verification failed" "$T/read.out" && fail "data lost on the other host"
stop m0
