# A client's WRITE_ZEROES and TRIM longer than 8 MiB reach each component
# as pieces of at most 8 MiB, in order, covering the range exactly: a file
# component (zeroed synchronously, so each piece ends inside the submit of
# the one before: issued by a loop, not nested calls) and an nbdkit disk
# whose log shows every piece.  Both copies read zeros there, the data
# around is kept.
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d1 160M --filter=log logfile="$T/d1.reqlog"
mkimg 160 a
head -c $((159 * MIB)) /dev/urandom >"$T/data"
dd if="$T/data" of="$T/a" conv=notrunc status=none
nbdcopy "$T/data" "$(disk_uri d1)"
bm label -n m0 "$T/a" "$(disk_uri d1)"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -z 8M 100M' -c 'discard 112M 20M' \
  -c 'write -z 140M 4M' >"$T/q.out" 2>&1 || { cat "$T/q.out"; fail "the client's zeroing failed"; }
grep -qiE 'error|fail' "$T/q.out" && { cat "$T/q.out"; fail "client saw an error"; }
# the disk's zero requests: "start end" in bytes, in the order they came
sed -n 's/.*Zero id=[0-9]* offset=\(0x[0-9a-f]*\) count=\(0x[0-9a-f]*\).*/\1 \2/p' "$T/d1.reqlog" |
  while read -r o c; do echo $((o)) $((o + c)); done >"$T/zeros"
[ -s "$T/zeros" ] || fail "no zero requests in the disk's log"
big=$(awk '$2 - $1 > 8 * 1048576' "$T/zeros" | wc -l)
[ "$big" -eq 0 ] || fail "$big zero requests longer than 8 MiB reached the disk: $(head -3 "$T/zeros")"
# pieces in order and contiguous: the runs they form are the client's ranges
runs=$(awk 'NR == 1 { s = $1; e = $2; next }
            $1 == e { e = $2; next }
            { print s, e; s = $1; e = $2 }
            END { print s, e }' "$T/zeros" | tr '\n' ' ')
want="$((8 * MIB)) $((108 * MIB)) $((112 * MIB)) $((132 * MIB)) $((140 * MIB)) $((144 * MIB)) "
[ "$runs" = "$want" ] || fail "zero pieces do not cover the client's ranges in order: $runs (want $want)"
n=$(wc -l <"$T/zeros")
[ "$n" -ge 17 ] || fail "only $n zero requests for 124 MiB: not in pieces"
stop m0
nbdcopy "$(disk_uri d1)" "$T/d1.img"
zeros() { cmp -n $(($3 * MIB)) -i $(($2 * MIB)):0 "$1" /dev/zero >/dev/null; }
same() { cmp -n $(($3 * MIB)) -i $(($2 * MIB)):$(($2 * MIB)) "$1" "$T/data" >/dev/null; }
for f in "$T/a" "$T/d1.img"; do
  zeros "$f" 8 100 && zeros "$f" 112 20 && zeros "$f" 140 4 ||
    fail "$f does not read zeros where the client zeroed and trimmed"
  same "$f" 0 8 && same "$f" 108 4 && same "$f" 132 8 && same "$f" 144 15 ||
    fail "$f: data outside the zeroed ranges changed"
done
echo "ok: $n zero pieces of at most 8 MiB, in order, on both copies"
