# A write inside a stream's read-ahead window is seen by the next read:
# the stream reads ahead, a block ahead of it is rewritten, and reading on
# returns the new data (never the chunk read before the write).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 0 32M' >/dev/null
cmds=()
for i in 0 1 2 3 4 5 6 7; do cmds+=(-c "read -P 0x11 $((i * 128))k 128k"); done
# the stream now reads ahead several MiB; rewrite blocks inside that window
cmds+=(-c 'write -P 0x22 2M 128k' -c 'write -P 0x33 3M 4k' -c 'write -z 3584k 64k')
for i in $(seq 8 40); do
  off=$((i * 128))
  case $off in
    2048) cmds+=(-c "read -P 0x22 ${off}k 128k") ;;
    3072) cmds+=(-c "read -P 0x33 3M 4k" -c "read -P 0x11 3076k 124k") ;;
    3584) cmds+=(-c "read -P 0 3584k 64k" -c "read -P 0x11 3648k 64k") ;;
    *) cmds+=(-c "read -P 0x11 ${off}k 128k") ;;
  esac
done
qemu-io -f raw "$u" "${cmds[@]}" >"$T/qio" 2>&1 || { cat "$T/qio"; fail "qemu-io failed"; }
grep -qiE 'mismatch|fail|error' "$T/qio" && { grep -iE -m5 'mismatch|fail|error' "$T/qio"; fail "stale read-ahead served"; }
hits=$(grep -c '^read ' "$T/qio")
[ "$hits" -ge 40 ] || fail "only $hits reads ran"
stop m0
same_data "$T/a" "$T/b"
