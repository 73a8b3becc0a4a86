# `stop` just after a client's long TRIM (24 MiB, one request) began on a
# component that zeroes by writing at 1 MiB/s: each 8 MiB piece takes 8 s
# (io-timeout 10 s, so each is waited for).  The stop must still end in
# io-timeout + 5 s: after the first piece, a second as long would take
# the request past the io-timeout, so it is not sent (judged on the age
# alone, it was: the stop took ~16 s).
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
need jq
slow_trim 1 10 40 24
# the trim is on the slow component (its queue holds it)
queued() { bm stat m0 -c 1 -I 100ms --json | jq -e '.rows[1].queue >= 1' >/dev/null; }
for _ in $(seq 1 50); do queued && break; sleep 0.1; done
queued || fail "the trim did not reach the slow component in 5 s"
stop_gives_up m0 "$(disk_uri z)" 15000 "io-timeout 10 s" \
  "trim left unfinished at the stop (caught up later): Connection timed out (offset 0, length $((24 * MIB)))"
echo "ok: a stop cut a trim of 8 s pieces in $stop_ms ms"
