# Two sequential readers at once on disks that seek: neither ends the
# other's read-ahead to take its memory (a stream is ended for another
# only when its client has gone: not read since the other began).  A
# version that ended streams not read for 50 ms dropped them back and
# forth ~4 times a second here (a read the read-ahead did not take waits
# long behind chunks on a seeking disk) and read at a third of the speed.
# Asserted on the read-ahead's own counts (BM_RA_DEBUG), not on speed.
. "$(dirname "$0")/lib.sh"
need fio
export BM_RA_DEBUG=1
for d in e0 e1; do emudisk $d size=1G rate=100 seek=8 rotational=0 fill=3; done
bm label -n m0 "$(disk_uri e0)" "$(disk_uri e1)"
serve m0
bm configure -b stream m0
fio --ioengine=nbd --uri="$(uri m0)" --rw=read --bs=128k --iodepth=1 --runtime=4 \
  --time_based --name=A --offset=0 --size=400M --name=B --offset=512M --size=400M \
  >"$T/fio.log" 2>&1 || { cat "$T/fio.log"; fail "fio failed"; }
stop m0
line=$(ra_line m0 '[0-9]* reads served')
ended=$(ra_count "$line" "streams ended for another")
[ -n "$ended" ] || fail "no count of ended streams"
[ "$ended" -le 2 ] || fail "$ended streams ended while both read"
