# NBD components that take at most 1 MiB per request (their server
# advertises that maximum block size and answers EINVAL past it) serve a
# mirror whose clients send up to 32 MiB per request, and whose read-ahead
# reads chunks of 2 MiB and more: the NBD backend sends longer reads and
# writes in pieces.  Before, a 4 MiB write failed out the first component
# and failed the client's write ("Invalid argument").
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdcopy
need nbdsh
# d0 takes FUA itself; d1 does not (the fua filter hides it), so a FUA
# write to it is its pieces and then a flush.  Each logs what it was sent.
disk d0 96M --filter=log --filter=blocksize-policy blocksize-maximum=1M \
  blocksize-error-policy=error logfile="$T/d0.nbdlog"
disk d1 96M --filter=log --filter=fua --filter=blocksize-policy blocksize-maximum=1M \
  blocksize-error-policy=error logfile="$T/d1.nbdlog"
# the disks really refuse more than 1 MiB (else this test shows nothing)
# (libnbd's strict mode off: it would refuse the request itself)
out=$(nbdsh -u "$(disk_uri d0)" -c 'h.set_strict_mode(0)' -c 'h.pread(2 * 1048576, 0)' 2>&1) &&
  fail "a 2 MiB read of d0 itself did not fail"
grep -q "Invalid argument" <<<"$out" || fail "a 2 MiB read of d0 failed otherwise: $out"

bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
BM_RA_DEBUG=1 serve m0
bm configure -b stream m0
head -c $((64 * MIB)) /dev/urandom >"$T/pattern"
# 32 MiB requests (the most our clients may send)
nbdcopy --request-size=$((32 * MIB)) "$T/pattern" "$(uri m0)" || fail "writing 32 MiB requests failed"
# 4 MiB with FUA at 60 MiB (0x3c00000), from nbdsh (qemu-io would flush
# at its exit): four pieces, each with FUA on d0; on d1 four pieces and
# then a flush, before the write is acknowledged (so the log taken when
# nbdsh returns has it; the mirror's own flush comes 2 s after the last
# write)
mark0=$(wc -l <"$T/d0.nbdlog") mark1=$(wc -l <"$T/d1.nbdlog")
nbdsh -u "$(uri m0)" -c "h.pwrite(b'\x5a' * (4 * 1048576), 60 * 1048576, nbd.CMD_FLAG_FUA)" ||
  fail "a 4 MiB FUA write failed"
cp "$T/d0.nbdlog" "$T/d0.acked"; cp "$T/d1.nbdlog" "$T/d1.acked"
out=$(qemu-io -f raw "$(uri m0)" -c "read -P 0x5a $((60 * MIB)) 4M" 2>&1) || fail "reading the 4 MiB back failed: $out"
grep -q "failed" <<<"$out" && fail "qemu-io: $out"
printf '\x5a%.0s' $(seq 1 $((4 * MIB))) | dd of="$T/pattern" bs=1M seek=60 conv=notrunc status=none
since() { local m=mark${1#d}; tail -n +$((${!m} + 1)) "$T/$1.acked"; } # what d0/d1 got for it
pieces() { since "$1" | grep -cE " Write id=[0-9]+ offset=0x3[cdef]00000 count=0x100000 fua=$2 "; }
[ "$(pieces d0 1)" = 4 ] || { since d0 | grep " Write "; fail "d0 got $(pieces d0 1) FUA pieces of the 4 MiB write (want 4)"; }
[ "$(pieces d1 0)" = 4 ] || { since d1 | grep " Write "; fail "d1 got $(pieces d1 0) pieces of the 4 MiB write (want 4)"; }
since d1 | sed -n '/ Write id=[0-9]* offset=0x3f00000 /,$p' | has " Flush id=" ||
  { since d1; fail "d1 got no flush after the last piece of the FUA write, before its acknowledgement"; }
# a QD1 stream, read back and compared: its read-ahead chunks (2 MiB and
# more) are read in pieces
nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri m0)" "$T/stream" ||
  fail "the stream read failed"
cmp -n $((64 * MIB)) "$T/pattern" "$T/stream" || fail "the stream read other data than written"
nbdcopy --request-size=$((32 * MIB)) "$(uri m0)" "$T/out" || fail "reading 32 MiB requests failed"
cmp -n $((64 * MIB)) "$T/pattern" "$T/out" || fail "the mirror read back other data than written"
st=$(bm status m0) || fail "status exits non-zero: $st"
echo "$st"
[ "$(grep -c '(ACTIVE)' <<<"$st")" = 2 ] || fail "a component left service: $st"
errs=$(bm stat --prometheus m0 | grep '_errors_total{' | awk '{s += $NF} END {print s + 0}')
[ "$errs" = 0 ] || fail "the components counted $errs errors"
# each component holds the data (read through its own 1 MiB limit)
for d in d0 d1; do
  nbdcopy --request-size=$MIB "$(disk_uri $d)" "$T/$d.img" || fail "reading $d failed"
  cmp -n $((64 * MIB)) "$T/pattern" "$T/$d.img" || fail "$d holds other data than written"
done
stop m0
# the stream was served by the read-ahead, from chunks longer than 1 MiB
served=$(ra_count "$(ra_line m0 '[0-9]* reads served')" "reads served")
[ "${served:-0}" -ge 400 ] || fail "only ${served:-no} of the stream's 512 reads came from the read-ahead"
chunk=$(sed -n 's/^ra: comp 0: chunk \([0-9]*\),.*/\1/p' "$T/m0.log")
[ "${chunk:-0}" -gt $MIB ] || fail "component 0's chunks were ${chunk:-?} bytes (want more than 1 MiB)"
echo ok
