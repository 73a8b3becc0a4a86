# What the read-ahead learned of a component (its speed, chunk size and
# piece length) belongs to the connection it measured: when the component
# comes back on a new one (here deactivated and activated again; also a
# reconnection, a rejoin, a new component in a reused slot), it starts
# again from what it says it is (readahead.c measures_follow_epoch), not
# from what its predecessor climbed to.  Two emulated disks with 8 ms seeks
# that do not announce it climb from 2 MiB chunks; after component 1 is
# activated again, its first decision is made at 2 MiB again, while
# component 0 goes on from where it was.  Asserted on BM_RA_DEBUG's
# decisions, not on throughput.
. "$(dirname "$0")/lib.sh"
need nbdkit
need nbdcopy
export BM_RA_DEBUG=1
MIB=1048576

# the chunk sizes component $1 decided from, in order, in the log from
# line $2 on
decided_at() {
  tail -n +"$2" "$T/m0.log" | sed -n "s/^ra: comp $1 chunk \([0-9]*\): positioning .*/\1/p"
}

stream_mirror m0 e0 e1 size=160M rate=100 seek=8 rotational=0 fill=3
# chose N MARK: the size component N's last decision before line MARK chose
chose() {
  head -n $(($2 - 1)) "$T/m0.log" |
    sed -n "s/^ra: comp $1 chunk [0-9]*: positioning .* -> chunk \([0-9]*\) .*/\1/p" | tail -n 1
}
end_of_log() { echo $(($(wc -l <"$T/m0.log") + 1)); }
# climbed N: component N's last decision chose more than 2 MiB
climbed() { [ "$(chose "$1" "$(end_of_log)")" -gt $((2 * MIB)) ] 2>/dev/null; }
for _ in 1 2 3 4; do
  qd1_stream m0
  climbed 0 && climbed 1 && break
done
bm deactivate m0 "$(disk_uri e1)"
bm activate --wait m0 "$(disk_uri e1)" >/dev/null
wait_complete m0
# (no stream since: what the log holds from here on is of the new epoch)
mark=$(end_of_log)
before=$(chose 1 "$mark") chose0=$(chose 0 "$mark")
echo "components 0 and 1 had chosen ${chose0:-no} and ${before:-no} byte chunks before the activation of 1"
[ "${before:-0}" -gt $((2 * MIB)) ] && [ "${chose0:-0}" -gt $((2 * MIB)) ] ||
  fail "the seeking disks did not both climb past 2 MiB chunks in 4 streams (last chosen: ${chose0:-nothing}, ${before:-nothing})"
for _ in 1 2 3; do
  qd1_stream m0
  [ -n "$(decided_at 1 "$mark")" ] && [ -n "$(decided_at 0 "$mark")" ] && break
done
stop m0
first=$(decided_at 1 "$mark" | sed -n 1p)
[ -n "$first" ] || fail "component 1 made no chunk-size decision after its activation (3 streams)"
echo "component 1 decided first at $first bytes after its activation"
[ "$first" = $((2 * MIB)) ] ||
  fail "component 1 started from $first-byte chunks after its activation, not from 2 MiB (its earlier connection's measures were kept)"
# component 0 was not touched: its first decision after is made above
# 2 MiB (what it learned is kept; not always at the very size it chose:
# while the previous stream is still counted, the memory bound is half)
next0=$(decided_at 0 "$mark" | sed -n 1p)
[ -n "$next0" ] || fail "component 0 made no decision after the activation of 1"
[ "$next0" -gt $((2 * MIB)) ] ||
  fail "component 0 (not deactivated) decided at $next0 after, back at its start, where it had chosen $chose0"
