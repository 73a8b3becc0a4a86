# SIGTERM stops the server within io-timeout + 5 s whatever the components
# do: here one stops answering (hangdisk in lib.sh) with a client write
# on it.  The io-timeout is set on the running mirror with configure.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
hangdisk p 64
bm label -n m0 "$T/a" "$(disk_uri p)"
serve m0
expect_error "no mirror named" bm configure --io-timeout 2 nope
bm configure --io-timeout 2 m0 || fail "configure --io-timeout failed"
hang p
qemu-io -f raw "$(uri m0)" -c 'write -P 0x11 0 1M' >"$T/qio" 2>&1 &
PIDS+=("$!")
sleep 0.5
pid=$(server_pid m0)
start=$(date +%s%N)
kill -TERM "$pid"
rc=0; timeout 30 tail --pid="$pid" -f /dev/null || rc=$?
[ $rc -eq 0 ] || fail "the server did not stop within 30 s of SIGTERM"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 7000 ] || fail "SIGTERM took $ms ms with io-timeout 2 s (want < 7 s)"
echo "stopped in $ms ms"
