# Remote NBD exports as components (nbdkit memory disks), mixed with a file:
# labeled, synchronized, served, and every component holds the data.
. "$(dirname "$0")/lib.sh"
need nbdcopy
disk d0 64M
disk d1 64M
mkimg 64 c
bm label m0 "$(disk_uri d0)" "$(disk_uri d1)" "$T/c"
serve m0
wait_complete m0
head -c $((63 * MIB)) /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(uri m0)"
nbdcopy "$(uri m0)" "$T/back"
cmp "$T/data" "$T/back" || fail "read back differs"
stop m0
for d in d0 d1; do
  nbdcopy "$(disk_uri $d)" "$T/$d.img"
  cmp -n $((63 * MIB)) "$T/data" "$T/$d.img" || fail "$d does not hold the data"
done
cmp -n $((63 * MIB)) "$T/data" "$T/c" || fail "c does not hold the data"
bm dump "$(disk_uri d1)" | has "Name: m0" || fail "dump of an NBD component"
