# clear refuses, without -f, to clear the label of the only up-to-date
# copy of a stopped mirror: the next start would take the older one as
# the mirror's (before: cleared; the next serve served b's old data, and
# insert of a as advised then copied it over the newer data for good).
# Nor while another component cannot be read to tell; -f clears; and
# clearing every component of a mirror in sync (dissolving it) needs no -f.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
truncate -s 64M "$T/b.img"
filedisk b "$T/b.img"
B=$(disk_uri b)
bm label -n m0 "$T/a" "$B" >/dev/null
serve m0 --io-timeout 2
disk_kill b
qemu-io -f raw "$(uri m0)" -c 'write -P 0x77 0 1M' >/dev/null
wait_status m0 "b.disk.sock (DISCONNECTED" 10
stop m0
filedisk b "$T/b.img"
a0=$(sha256sum <"$T/a")
expect_error "$T/a is the only up-to-date copy of mirror 'm0' \(generation [0-9]+; .*b.disk.sock has [0-9]+\): cleared, the next start takes the older data; 'blkmirror clear -f $T/a' clears it anyway" bm clear "$T/a"
[ "$(sha256sum <"$T/a")" = "$a0" ] || fail "the refused clear changed a"
# b cannot be read: cannot tell
disk_kill b
expect_error "$T/a may be the only up-to-date copy of mirror 'm0': the label of .*b.disk.sock cannot be read to tell" bm clear "$T/a"
# clearing the stale one is fine
filedisk b "$T/b.img"
out=$(bm clear "$B") || fail "clear of the stale copy: $out"
# the newest, with -f (b no longer labelled: nothing older would win, but
# -f is what an administrator gives after the refusal above)
out=$(bm clear -f "$T/a") || fail "clear -f: $out"
out=$(bm dump "$T/a" 2>&1) || true
has "has no blkmirror label" <<<"$out" || fail "a still labelled: $out"
# a mirror in sync: clearing its components one by one needs no -f, and
# the record stays while one of them still carries the label, also when it
# cannot be read at that moment
mkimg 64 c
truncate -s 64M "$T/d.img"
filedisk d "$T/d.img"
D=$(disk_uri d)
bm label -n m1 "$T/c" "$D" >/dev/null
disk_kill d
expect_error "$T/c may be the only up-to-date copy" bm clear "$T/c"
bm clear -f "$T/c" >/dev/null || fail "clear -f c"
filedisk d "$T/d.img"
bm status m1 >"$T/st.out" 2>&1 || true
has "no mirror named" "$T/st.out" && fail "m1 was forgotten while d still carries its label"
out=$(bm clear "$D") || fail "clear of the last labelled component: $out"
out=$(bm status m1 2>&1) || true
has "no mirror named 'm1'" <<<"$out" || fail "m1 not forgotten once no component carries its label: $out"
# a mirror not stopped cleanly (killed): its copies of one generation are
# equally current, so clearing one needs no -f (the other keeps the data)
mkimg 64 e f
bm label -n m2 "$T/e" "$T/f" >/dev/null
serve m2
qemu-io -f raw "$(uri m2)" -c 'write -P 0x66 0 1M' >/dev/null
kill -9 "$(server_pid m2)"; wait "$(server_pid m2)" 2>/dev/null || true
bm dump "$T/e" | has "DIRTY" || fail "e is not dirty after the kill"
out=$(bm clear "$T/e" 2>&1) || fail "clear of one of two current copies of a dirty mirror: $out"
# a deactivated copy does not keep the data: a (only current) with b
# INACTIVE and c older is refused
mkimg 64 g h i
bm label -n m3 "$T/g" "$T/h" "$T/i" >/dev/null
mv "$T/i" "$T/i.away"
serve m3
qemu-io -f raw "$(uri m3)" -c 'write -P 0x77 0 1M' >/dev/null
bm deactivate m3 "$T/h" >/dev/null || fail "deactivate h"
stop m3
mv "$T/i.away" "$T/i"
expect_error "$T/g is the only up-to-date copy of mirror 'm3': cleared, the next start is refused \($T/i, the newest left, is behind $T/h\)" bm clear "$T/g"
