# Scenario 26: two components failing different writes at the same moment.
# One answers at once, the other after 2 ms; each fails half of all writes;
# 16 writes of 4 KiB in flight.  No write may be acknowledged unless a
# component still in service holds it: after a restart every acknowledged
# write reads back.  Several rounds, because the bad interleaving (W1 fails
# on B, W2 on A) is a race.
. "$(dirname "$0")/lib.sh"
need nbdsh
tool=$(dirname "$0")/../tools/acked_writes.py
for round in 1 2 3 4; do
  disk a$round 64M --filter=error error-pwrite=EIO error-pwrite-rate=50% \
    error-pwrite-file="$T/fail$round"
  disk b$round 64M --filter=error --filter=delay error-pwrite=EIO \
    error-pwrite-rate=50% error-pwrite-file="$T/fail$round" wdelay=2ms
  bm label -n m$round "$(disk_uri a$round)" "$(disk_uri b$round)"
  serve m$round
  touch "$T/fail$round"
  "$PY" "$tool" write "$(uri m$round)" "$T/acked$round" 300 16 $round
  rm "$T/fail$round"
  stop m$round
  serve m$round
  "$PY" "$tool" verify "$(uri m$round)" "$T/acked$round" ||
    { cat "$T/m$round.log"; fail "round $round: an acknowledged write was lost"; }
  stop m$round
done
