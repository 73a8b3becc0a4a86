#!/usr/bin/env bash
# attach/detach refuse what they must, each in one line: wrong command
# lines (exit 2); an unknown or stopped mirror; a second attach; detach
# while the device is mounted (naming the mount point, by name and by
# device); stop while attached (naming the device, even with -f); a device
# blkmirror did not attach.  After the refusals detach and stop work and
# the state directory holds nothing of the attachment.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "attach needs root (loop devices)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE)"
need nbdfuse; need losetup; need mkfs.ext4

expect_usage 'usage: blkmirror attach' bm attach
expect_usage 'usage: blkmirror attach' bm attach m0 m1
expect_usage "unknown option '--bogus'" bm attach --bogus m0
expect_usage "'--device' needs a value" bm attach m0 --device
expect_usage "not a device path" bm attach --device loop7 m0
expect_usage 'usage: blkmirror detach' bm detach
expect_usage 'usage: blkmirror detach' bm detach m0 m1
expect_usage "unknown option '-f'" bm detach -f m0

expect_error "no mirror named 'nosuch'" bm attach nosuch
expect_error "invalid mirror name" bm attach 'a/b'
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
expect_error "mirror 'm0' is not running; start it" bm attach m0
expect_error "m0 is not attached" bm detach m0
expect_error "no mirror named 'nosuch'" bm detach nosuch

serve m0
# --device: not a loop device, a loop device in use (nothing is left of
# the attempt), /dev/nbdN without the kernel's nbd.
expect_error "/dev/null is not a loop device" bm attach --device /dev/null m0
truncate -s 1M "$T/busy"
busy=$(losetup -f --show "$T/busy")
expect_error "$busy is already in use \(over $T/busy\)" bm attach --device "$busy" m0
[ "$(losetup -n -O BACK-FILE "$busy")" = "$T/busy" ] || fail "attach touched $busy"
losetup -d "$busy"
[ ! -e "$T/state/m0.fuse" ] && [ ! -e "$T/state/m0.attach" ] ||
  fail "a failed attach left $(ls "$T/state")"
! grep -q " $T/" /proc/mounts || fail "a failed attach left a mount"
if [ ! -e /sys/module/nbd ]; then
  expect_error "/dev/nbd0: this machine has no kernel NBD driver" \
    bm attach --device /dev/nbd0 m0
fi

# Two attaches at once: one device, the other refused.
bm attach m0 >"$T/a1" 2>&1 & p1=$!
bm attach m0 >"$T/a2" 2>&1 & p2=$!
r1=0; wait $p1 || r1=$?
r2=0; wait $p2 || r2=$?
[ $((r1 + r2)) -eq 1 ] || fail "two attaches exited $r1 and $r2: $(cat "$T/a1" "$T/a2")"
dev=$(cat "$T/a1" "$T/a2" | grep '^/dev/')
grep -q "m0 is already attached as $dev" "$T/a1" "$T/a2" ||
  fail "the second attach said: $(cat "$T/a1" "$T/a2")"
expect_error "m0 is already attached as $dev\$" bm attach m0
[ "$(bm attach m0 2>/dev/null)" = "" ] || fail "a refused attach printed on stdout"

mkfs.ext4 -q -F "$dev"
mkdir "$T/mnt"
mount "$dev" "$T/mnt"
expect_error "$dev \(m0\) is mounted on $T/mnt; unmount it first" bm detach m0
expect_error "$dev \(m0\) is mounted on $T/mnt" bm detach "$dev"
expect_error "m0 is attached as $dev; detach it first" bm stop m0
expect_error "m0 is attached as $dev; detach it first" bm stop -f m0
grep -q " $T/mnt " /proc/mounts || fail "the file system was unmounted"
echo data >"$T/mnt/still-here"
umount "$T/mnt"

# A device open by a program is refused too (the program is named).
sleep 600 <"$dev" &
holder=$!
PIDS+=("$holder")
expect_error "$dev \(m0\) is open by pid $holder \(sleep\)" bm detach m0
kill "$holder"; wait "$holder" 2>/dev/null || true

# A loop device blkmirror did not make is not its to detach.
truncate -s 1M "$T/other"
other=$(losetup -f --show "$T/other")
expect_error "$other is not a device blkmirror attached" bm detach "$other"
losetup "$other" >/dev/null || fail "detach touched $other"
losetup -d "$other"

bm detach "$dev" >/dev/null || fail "detach by device failed"
expect_error "m0 is not attached" bm detach m0
stop m0
left=$(cd "$T/state" && ls | tr '\n' ' ')
[ "$left" = "m0.components m0.lock m0.sizes " ] || fail "state directory holds: $left"
