# fio's nbd engine, random writes with verification at queue depth 16 from
# two connections at once; then the components are identical.
. "$(dirname "$0")/lib.sh"
need fio
fio --enghelp 2>/dev/null | has -w nbd || skip "fio has no nbd engine"
mkimg 40 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
fio --name=w --ioengine=nbd --uri="$(uri m0)" --rw=randwrite --bs=4k \
    --iodepth=16 --numjobs=2 --size=16M --offset_increment=16M \
    --verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting \
    >"$T/fio.out" 2>&1 || { cat "$T/fio.out"; fail "fio failed"; }
grep -q "err= 0" "$T/fio.out" || { cat "$T/fio.out"; fail "fio reported errors"; }
stop m0
same_data "$T/a" "$T/b"
