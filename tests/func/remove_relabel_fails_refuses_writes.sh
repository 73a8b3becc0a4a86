# remove whose relabel fails on the only component left ACTIVE: it stays
# (the last one), but no label records the removal, so a write now could
# lose to the removed disk at the next start (both labels at the old
# generation); writes are refused, and status says so, until a label write
# succeeds; then they resume.  Before, writes were acknowledged at once.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
faildisk f 64
F=$(disk_uri f)
bm label -n m0 "$T/a" "$F" >/dev/null
serve m0
wait_complete m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 0 64k' >/dev/null || fail "first write"
gen0=$(bm dump "$F" | sed -n 's/^ *GenID: //p')
fail_writes f $((64 * MIB - 4096))
out=$(bm remove m0 "$T/a" 2>&1) || true
echo "remove: $out" >&2
has "the label of $F could not record the removal" <<<"$out" || fail "remove did not name f"
has "writes to m0 are refused until a label write succeeds" <<<"$out" || fail "remove did not say writes are refused"
bm list m0 | has "$T/a" && fail "a is still listed: $(bm list m0)"
rc=0; qemu-io -f raw "$u" -c 'write -P 0x22 1M 64k' >"$T/w.out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a write was acknowledged though no label records the removal"
has "Input/output error" "$T/w.out" || fail "the refused write said: $(cat "$T/w.out")"
bm status m0 2>&1 | tee "$T/st.out" >&2 || true
has -i "writes" "$T/st.out" || fail "status does not say writes are refused"
take_writes f
# the next label write (the idle clean within a few seconds) records it
for _ in $(seq 1 100); do
  qemu-io -f raw "$u" -c 'write -P 0x33 1M 64k' >/dev/null 2>&1 && break
  sleep 0.2
done
qemu-io -f raw "$u" -c 'read -P 0x33 1M 64k' >"$T/r.out" 2>&1 || fail "writes did not resume: $(cat "$T/r.out")"
has "Pattern verification failed" "$T/r.out" && fail "read back: $(cat "$T/r.out")"
stop m0
gen1=$(bm dump "$F" | sed -n 's/^ *GenID: //p')
[ "$gen1" -gt "$gen0" ] || fail "f's label never recorded the removal: GenID $gen0 -> $gen1"
