# The same NBD export through two URIs (a socket and a symlink to it, two
# export names of a single-export nbdkit) is refused by the content check,
# and the export's bytes are as they were.
. "$(dirname "$0")/lib.sh"
need nbdcopy
disk d0 16M
disk d1 16M
head -c $((16 * MIB)) /dev/urandom >"$T/data"
nbdcopy "$T/data" "$(disk_uri d0)"
ln -s "$T/d0.disk.sock" "$T/d0.link.sock"
link="nbd+unix:///?socket=$T/d0.link.sock"
expect_error "d0.disk.sock and [^ ]*d0.link.sock are the same disk \(a block written through one was read back" \
  bm label -f m0 "$(disk_uri d0)" "$link"
other="nbd+unix:///another?socket=$T/d0.disk.sock"
expect_error "same disk" bm label -f m0 "$(disk_uri d1)" "$(disk_uri d0)" "$other"
nbdcopy "$(disk_uri d0)" "$T/back"
cmp "$T/data" "$T/back" || fail "the content check changed the export"
# Two exports are two disks.
bm label -f m0 "$(disk_uri d0)" "$(disk_uri d1)"
