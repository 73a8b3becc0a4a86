# blkmirror stat: gstat's columns, a row per component and one for the
# mirror; reads show up on the components that served them; JSON parses.
. "$(dirname "$0")/lib.sh"
need fio
need jq
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
expect_error "no mirror named 'nope2'" bm stat nope2 -b
mkdir -p "$BLKMIRROR_STATE_DIR"; : > "$BLKMIRROR_STATE_DIR/nope2.components"
expect_error "mirror 'nope2' is not running" bm stat nope2 -b
expect_usage "interval" bm stat m0 -I 0
expect_usage "usage" bm stat
fio --name=r --ioengine=nbd --uri="$(uri m0)" --rw=randread --bs=4k --iodepth=4 \
    --size=60M --runtime=3 --time_based >/dev/null 2>&1 &
fpid=$!
sleep 0.5
out=$(bm stat m0 -b -d)
echo "$out"
# (no pipe into grep -q: under pipefail a writer cut off early fails it)
hdr=$(sed -n 2p <<<"$out")
[[ "$hdr" == *'L(q)  ops/s    r/s   kBps   ms/r    w/s   kBps   ms/w    d/s   kBps   ms/d   %busy Name'* ]] ||
  fail "header: '$hdr'"
[[ "$(sed -n 1p <<<"$out")" == 'dT: '*'server CPU: '*'%' ]] || fail "first line: $out"
echo "$out" | has "| $T/a$" || fail "no row for a"
echo "$out" | has "| mirror/m0$" || fail "no mirror row"
json=$(bm stat m0 -c 1 -I 500ms --json)
wait $fpid
echo "$json" | jq -e '.rows | length == 3' >/dev/null || fail "json rows: $json"
echo "$json" | jq -e '.rows[2].r_s > 100' >/dev/null || fail "mirror shows no reads: $json"
# the server's own CPU time, to the microsecond (getrusage): a server
# serving reads for half a second used some
echo "$json" | jq -e '.server_cpu_pct > 0 and .server_cpu_s > 0' >/dev/null ||
  fail "no server CPU: $json"
echo "$json" | jq -e '(.rows[0].r_s + .rows[1].r_s) > 100 and .rows[0].r_s > 0 and .rows[1].r_s > 0' >/dev/null ||
  fail "reads not spread over both components: $json"
stop m0
