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
