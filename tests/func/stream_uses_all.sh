# One sequential reader with one request in flight (the report's dd): under
# `stream` every component reads; under `prefer` only one does.  Checked
# from `blkmirror stat --json` while the read runs, not from timings.
. "$(dirname "$0")/lib.sh"
need nbdcopy
need jq
disk d0 200M --filter=rate rate=400M burstiness=0.05   # 50 MiB/s: the read lasts seconds
disk d1 200M --filter=rate rate=400M burstiness=0.05
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0 --readahead 16M
per_component() { # starts a dd-like read, samples stat, prints "r0 r1"
  nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri m0)" null: &
  local p=$!
  sleep 0.3
  bm stat m0 -c 1 -I 400ms --json | jq -r '"\(.rows[0].r_kBps) \(.rows[1].r_kBps)"'
  kill $p 2>/dev/null || true; wait $p 2>/dev/null || true
}
read -r a b <<<"$(per_component)"
echo "stream: $a $b kB/s"
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 1000 && b > 1000) }' || fail "stream left a component idle ($a, $b)"
bm configure -b prefer m0
read -r a b <<<"$(per_component)"
echo "prefer: $a $b kB/s"
awk -v a="$a" -v b="$b" 'BEGIN { exit !((a > 1000) != (b > 1000)) }' || fail "prefer did not read from one component ($a, $b)"
stop m0
