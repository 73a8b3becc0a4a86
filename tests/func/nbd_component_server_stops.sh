# An idle mirror's NBD component whose server is asked to stop (nbdkit
# on SIGTERM answers every request with ESHUTDOWN, and keeps the
# connection open for a while): the next lease renewal finds it and the
# component is DISCONNECTED within about a second, with the reason
# (before: ACTIVE in status for ~16 s, until the server closed).
. "$(dirname "$0")/lib.sh"
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
sleep 0.5
kill -TERM "$(cat "$T/d1.disk.pid")"
t0=$(date +%s%N)
wait_status m0 "d1.disk.sock (DISCONNECTED: cannot reach its lease: its server is shutting down[);]" 5
ms=$((($(date +%s%N) - t0) / 1000000))
echo "DISCONNECTED after $ms ms"
[ "$ms" -lt 4000 ] || fail "took $ms ms"
stop m0
echo ok
