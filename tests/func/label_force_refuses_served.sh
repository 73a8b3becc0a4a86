# label -f overwrites another mirror's label, but never the label of a
# component a running server uses: an NBD export (no file lock to stop
# it; its lease is renewed) is refused with who serves it, nothing on it
# changes, and the running mirror stays whole; once that server stopped,
# label -f goes ahead.
. "$(dirname "$0")/lib.sh"
disk d0 64M
disk d1 64M
u1=$(disk_uri d1)
bm label -n m0 "$(disk_uri d0)" "$u1"
serve m0
before=$(bm dump "$u1")
expect_error "is served by another blkmirror \(host .*, pid $(server_pid m0), mirror .m0.\): its lease is being renewed; stop that server first" \
  bm label -f mx "$u1"
[ "$(bm dump "$u1")" = "$before" ] || fail "label -f changed the served label: $(bm dump "$u1")"
bm status m0 | has COMPLETE || fail "m0 is not whole"
stop m0
bm label -f mx "$u1" || fail "label -f refused a component no server uses"
bm dump "$u1" | has "Name: mx" || fail "the label was not written"
echo ok
