# A copy over a large hole of the source, onto a component that zeroes by
# writing (an NBD server without a zero of its own: nbdkit then writes
# zeros) at 7 MiB/s, with --io-timeout 2: the hole is zeroed in pieces
# that each end well within the io-timeout, so the component is never
# taken for hung, and the mirror becomes COMPLETE with zeros where the
# target held old data.  (One 62 MiB request took 9 s: the watchdog saw
# nothing end for 2 s, disconnected the component, and the copy began
# again, for ever.)
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdkit
mkimg 64 a
qemu-io -f raw "$T/a" -c 'write -P 0x5a 0 1M' >/dev/null   # data, then a hole
head -c $((64 * MIB)) /dev/zero | tr '\0' '\063' >"$T/z.img"  # old data
zerowriting_disk z "$T/z.img" 7
bm label -f m0 "$T/a" "$(disk_uri z)"
serve m0 --io-timeout 2
for _ in $(seq 1 300); do
  bm status m0 2>/dev/null | has COMPLETE && break
  sleep 0.1
done
bm status m0 | has COMPLETE || { cat "$T/m0.log"; fail "the copy did not end in 30 s"; }
has ComponentDisconnected "$T/m0.log" &&
  { cat "$T/m0.log"; fail "the slow-zeroing component was taken for hung"; }
stop m0
n=$(data_size "$T/a")
same_data "$T/a" "$T/z.img" "$n"
echo "ok: a large hole copied in pieces onto a slow-zeroing component"
