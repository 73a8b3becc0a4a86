# Two URIs of one NBD export (the kernel cannot tell: the label's component
# id does): the second is ABSENT "the same component as" the first (the
# mirror shows DEGRADED until that path is removed from it), and the two
# real members are ACTIVE and get the writes.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a
disk d 16M
bm label -n m0 "$T/a" "$(disk_uri d)"
ln -s "$T/d.disk.sock" "$T/d.other.sock"
other="nbd+unix:///?socket=$T/d.other.sock"
echo "$other" >>"$BLKMIRROR_STATE_DIR/m0.components"
serve m0
out=$(bm status m0) || true
grep -qF "$other (ABSENT: the same component as $(disk_uri d) (the same component id" <<<"$out" ||
  fail "the second URI is not left out: $out"
[ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] || fail "not two ACTIVE components: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x3c 0 1M' >/dev/null
stop m0
out=$(qemu-io -f raw "$(disk_uri d)" -c 'read -P 0x3c 0 1M') || true
grep -q "^read 1048576" <<<"$out" || fail "the export lacks the write: $out"
