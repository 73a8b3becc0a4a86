# Replies sent from lent read-ahead buffers (no copy: BM_IO_BORROW) stay
# right while a write drops the chunks they point into and another stream
# reuses the read-ahead's memory: a client leaves many replies unread (so
# they wait in the server's queue), a second connection rewrites their
# range, a third reads elsewhere; every block of the replies is the right
# block, old or new version (tests/tools/nbd_lend.c).  Under ASan a lent
# buffer back in the chunk memory while its reply waits is poisoned: the server's
# sendmsg would stop it.
. "$(dirname "$0")/lib.sh"
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b"
BM_RA_DEBUG=1 serve m0
bm configure -b stream m0
"$TEST_TOOLS/nbd_lend" "$(uri m0)" 12 >"$T/lend" 2>&1 ||
  { cat "$T/lend"; grep -v '^ra: ' "$T/m0.log" | head -n 30; fail "a reply from a lent buffer was wrong"; }
cat "$T/lend"
stop m0
lent=$(ra_count "$(ra_line m0 '[0-9]* reads served')" "from lent buffers")
[ "${lent:-0}" -gt 100 ] || fail "few reads were lent: ${lent:-none}"
echo "$lent reads sent from lent buffers"
same_data "$T/a" "$T/b"
