# `stop` while a slow component holds a queue that takes longer to drain
# than the stop may take (io-timeout + 5 s): once the mirror is closing a
# request is waited for io-timeout at most, so the slow component is given
# up, the client's writes are acknowledged from the other copy, and the
# server stops cleanly in time instead of leaving requests unanswered.
# A 4 MiB/s disk holds 16 writes of 4 MiB (16 s to drain; io-timeout 5 s,
# so while the mirror runs they are under the 20 s ceiling and waited for).
. "$(dirname "$0")/lib.sh"
need fio
mkimg 129 a
emudisk s size=129M rate=4
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0 --io-timeout 5
fio --ioengine=nbd --uri="$(uri m0)" --rw=write --bs=4M --iodepth=16 --size=120M \
  --name=w >"$T/fio.log" 2>&1 &
PIDS+=("$!")
sleep 4
# given up by the watchdog ("unanswered at the stop") or by a label or
# bitmap write that waited behind the queue
stop_gives_up m0 "$(disk_uri s)" 10000 "io-timeout 5 s"
