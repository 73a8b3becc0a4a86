# Client writes racing the initial sync on the same ranges: afterwards the
# components are identical and hold the client's data.
. "$(dirname "$0")/lib.sh"
need fio
fio --enghelp 2>/dev/null | has -w nbd || skip "fio has no nbd engine"
mkimg 200 a b
head -c $((199 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
bm label m0 "$T/a" "$T/b"
serve m0
fio --name=w --ioengine=nbd --uri="$(uri m0)" --rw=randwrite --bs=64k \
    --iodepth=8 --size=199M --io_size=64M --verify=crc32c --do_verify=1 \
    --verify_fatal=1 >"$T/fio.out" 2>&1 || { cat "$T/fio.out"; fail "fio failed"; }
wait_complete m0
stop m0
same_data "$T/a" "$T/b"
