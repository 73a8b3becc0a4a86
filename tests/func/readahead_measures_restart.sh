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

stream() {
  nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri "$1")" null:
}
# the chunk sizes component $1 decided from, in order, in the log from
# line $2 on
decided_at() {
  tail -n +"$2" "$T/m0.log" | sed -n "s/^ra: comp $1 chunk \([0-9]*\): positioning .*/\1/p"
}

stream_mirror m0 e0 e1 size=160M rate=100 seek=8 rotational=0 fill=3
for _ in 1 2 3; do
  stream m0
  # climbed past 2 MiB: a decision made at 4 MiB or more
  decided_at 1 1 | awk '$1 > 2097152 { ok = 1 } END { exit !ok }' && break
done
decided_at 1 1 | awk '$1 > 2097152 { ok = 1 } END { exit !ok }' ||
  fail "component 1 never climbed past 2 MiB chunks on a seeking disk (3 streams)"
before=$(decided_at 1 1 | tail -n 1)
echo "component 1 decided last at $before bytes before its activation"

bm deactivate m0 "$(disk_uri e1)"
mark=$(($(wc -l <"$T/m0.log") + 1))
bm activate --wait m0 "$(disk_uri e1)" >/dev/null
wait_complete m0
for _ in 1 2 3; do
  stream m0
  [ -n "$(decided_at 1 "$mark")" ] && break
done
stop m0
first=$(decided_at 1 "$mark" | head -n 1)
[ -n "$first" ] || fail "component 1 made no chunk-size decision after its activation (3 streams)"
echo "component 1 decided first at $first bytes after its activation"
[ "$first" = $((2 * MIB)) ] ||
  fail "component 1 started from $first-byte chunks after its activation, not from 2 MiB (its earlier connection's measures were kept)"
# component 0 was not touched: its first decision after is made at the
# size its last one before chose
chose0=$(head -n $((mark - 1)) "$T/m0.log" |
  sed -n 's/^ra: comp 0 chunk [0-9]*: positioning .* -> chunk \([0-9]*\) .*/\1/p' | tail -n 1)
next0=$(decided_at 0 "$mark" | head -n 1)
[ -n "$chose0" ] && [ -n "$next0" ] || fail "component 0 made no decision before or after (${chose0:-none}, ${next0:-none})"
[ "$next0" = "$chose0" ] ||
  fail "component 0 (not deactivated) decided at $next0 after, where its last decision had chosen $chose0"
