# A label that cannot be written on every component changes none of them:
# the second component refuses its label write, and the first, already
# labelled, gets back what its last MiB held (before: its label zeroed,
# its bitmap left).  A read-only block device is refused before anything
# is written, saying it is read-only.
. "$(dirname "$0")/lib.sh"
mkimg 64 a
head -c $((64 * MIB)) /dev/urandom >"$T/a"
faildisk f 64
head -c $((64 * MIB)) /dev/urandom >"$T/f.img"
a0=$(sha256sum <"$T/a"); f0=$(sha256sum <"$T/f.img")
fail_writes f $((64 * MIB - 4096))
expect_error "cannot write the label" bm label m1 "$T/a" "$(disk_uri f)"
[ "$(sha256sum <"$T/a")" = "$a0" ] || fail "the refused label changed a"
[ "$(sha256sum <"$T/f.img")" = "$f0" ] || fail "the refused label changed f"
take_writes f
if [ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null &&
   lr=$(losetup -r -f --show "$T/f.img" 2>/dev/null); then
  expect_error "$lr: the device is read-only; a component must be writable" bm label m1 "$T/a" "$lr"
  [ "$(sha256sum <"$T/a")" = "$a0" ] || fail "the refused label changed a"
fi
bm label m1 "$T/a" "$(disk_uri f)" >/dev/null || fail "the label once f takes writes"
