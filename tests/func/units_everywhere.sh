# Sizes, rates and times are written the same way for every verb: a size
# or rate takes K/M/G/T, also as KiB or KB (10M = 10MiB = 10MB), a rate may
# end in /s; a time takes s, ms or min.  Before, --sync-min 10MiB,
# --io-timeout 5s and stop -t 1.5s were refused while stat -I 500ms was
# taken.  What is not a size or a time is still refused, naming the forms.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
hangdisk r 32
bm label -n m0 "$T/a" "$(disk_uri r)" >/dev/null
expect_usage "io-timeout '1.5s' is not a whole number of seconds from 0 \(never\) to 3600 \(e.g. 30, 30s, 1min\)" \
  bm serve m0 --io-timeout 1.5s
expect_usage "io-timeout '2h' is not a whole number" bm serve m0 --io-timeout 2h
expect_usage "io-timeout '-1' is not a whole number" bm serve m0 --io-timeout=-1
expect_usage "io-timeout '61min' is not a whole number" bm serve m0 --io-timeout 61min
expect_usage "io-timeout '0x10' is not a whole number" bm serve m0 --io-timeout 0x10
expect_usage "sync-min '10Mi' is not a rate" bm configure --sync-min 10Mi m0
expect_usage "sync-min '10iB' is not a rate" bm configure --sync-min 10iB m0
expect_usage "timeout '1e3' is not a time from 0 \(no limit\) to 86400 s" bm stop -t 1e3 m0
expect_usage "timeout 'nan' is not a time" bm stop -t nan m0
expect_usage "timeout ' 5' is not a time" bm stop -t ' 5' m0
expect_usage "interval '5ms' is not a time from 10ms" bm stat -I 5ms m0
expect_usage "interval '50ms' is not a time from 0.1s" bm monitor --interval 50ms --oneshot

# the io-timeout written with a unit is the one the server uses: r hangs
# at the start and is left out after 2 s, not the default 30
hang r
serve m0 --io-timeout 2s
has "leaving out .*r.disk.sock: does not answer: its label was not read within 2 s" "$T/m0.log" ||
  fail "--io-timeout 2s was not 2 s: $(cat "$T/m0.log")"
answer r
wait_complete m0
bm configure --io-timeout 1min m0 >/dev/null || fail "configure --io-timeout 1min"
# 20MB/s, 20MiB and 20971520 are one rate: a floor at it is taken, one
# byte per second above it is not (the server compares the two)
bm configure --sync-max 20MB/s m0 >/dev/null || fail "configure --sync-max 20MB/s"
bm configure --sync-min 20MiB m0 >/dev/null || fail "configure --sync-min 20MiB under a 20MB/s ceiling"
expect_error "above" bm configure --sync-min 20971521 m0
bm configure --sync-max 1G --sync-min 10MiB m0 >/dev/null || fail "configure 1G / 10MiB"
out=$(timeout 10 "$BLKMIRROR" stat -I 500ms -c 2 m0 2>&1) || fail "stat -I 500ms: $out"
out=$(bm stop -t 1.5s m0) || fail "stop -t 1.5s: $out"
has "m0 stopped cleanly" <<<"$out" || fail "stop said: $out"
