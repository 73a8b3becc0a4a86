# Wrong arguments of every kind: one-line error, exit status 1 (2 for a
# wrong command line), and nothing on any component changes.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c
mkimg 1 tiny
mkdir "$T/dir"
bm label m0 "$T/a" "$T/b"
before=$(cat "$T/a" "$T/b" "$T/c" | sha256sum)

expect_usage "unknown verb"                bm frobnicate
expect_usage "usage: blkmirror label"      bm label
expect_usage "usage: blkmirror label"      bm label m1
expect_usage "invalid mirror name"         bm label 'bad/name' "$T/c"
expect_usage "invalid mirror name"         bm label -- '-x' "$T/c"
expect_usage "invalid mirror name"         bm label 0123456789012345678901234567890123 "$T/c"
expect_usage "unknown balance algorithm"   bm label -b fastest m1 "$T/c"
expect_usage "slice .* power of two"       bm label -s 1000 m1 "$T/c"
expect_usage "slice .* power of two"       bm label -s -4k m1 "$T/c"
expect_error "no such file"                bm label m1 "$T/c" "$T/missing"
expect_error "is a directory"              bm label m1 "$T/dir"
expect_error "not a regular file or block" bm label m1 /dev/null
expect_error "too small"                   bm label m1 "$T/c" "$T/tiny"
expect_error "same disk"                   bm label m1 "$T/c" "$T/c"
# a path the state directory could not record (one a line, tab-split)
truncate -s 16M "$T/nl
x" "$T/t	x"
expect_usage "label: component '.*/nl.nx': a path may not be empty or hold a tab or newline" bm label m1 "$T/c" "$T/nl
x"
expect_usage "label: component '.*/t.tx': a path may not be empty" bm label m1 "$T/c" "$T/t	x"
expect_usage "label: component '': a path may not be empty" bm label m1 "$T/c" ""
ln -s "$T/c" "$T/c.link"; ln "$T/c" "$T/c.hard"
expect_error "same disk"                   bm label m1 "$T/c" "$T/c.link"
expect_error "same disk"                   bm label m1 "$T/c.hard" "$T/c"
expect_error "already a component of mirror 'm0'" bm label m1 "$T/c" "$T/a"
expect_error "mirror 'm0' already exists"  bm label m0 "$T/c"
expect_usage "usage: blkmirror serve"      bm serve m0 m1   # one NAME; without --socket it serves on the default socket
expect_usage "usage: blkmirror serve"      bm serve --socket "$T/s"
expect_usage "serve: --socket needs a path" bm serve m0 --socket ""
expect_error "monitor: --exec: cannot run '/nonexistent': No such file" bm monitor --exec /nonexistent --oneshot
expect_error "monitor: --exec: cannot run '.*/c': Permission denied" bm monitor --exec "$T/c" --oneshot
expect_error "no mirror named 'nope'"      bm serve nope --socket "$T/s"
expect_usage "HOST:PORT"                   bm serve m0 --tcp 12a45
expect_usage "HOST:PORT"                   bm serve m0 --tcp localhost:
expect_usage "readahead .* not a size"     bm serve m0 --socket "$T/s" --readahead lots
# numbers past 2^64 with a unit are refused, not wrapped to 0 (off);
# seconds and counts take no unit
expect_usage "readahead .* not a size"     bm serve m0 --socket "$T/s" --readahead 17179869184G
expect_usage "io-timeout .* not a whole number of seconds" bm serve m0 --socket "$T/s" --io-timeout 18014398509481984K
expect_usage "io-timeout .* not a whole number of seconds" bm serve m0 --socket "$T/s" --io-timeout 3K
expect_usage "io-timeout .* not a whole number of seconds" bm configure --io-timeout 3K m0
expect_usage "read-errors .* not a count"  bm serve m0 --socket "$T/s" --read-errors 18014398509481984K
expect_usage "max-connections .* not a count" bm serve m0 --socket "$T/s" --max-connections 1K
expect_usage "sync-max .* not a rate"      bm configure --sync-max 17179869184G m0
expect_usage "bitmap|region"               bm label -r 17179869184G m1 "$T/c"
expect_usage "interval 'nan' is not a time" bm stat -I nan m0
expect_usage "interval 'inf' is not a time" bm stat -I inf m0
expect_error "too long"                    bm serve m0 --socket "$T/$(printf 'x%.0s' $(seq 1 120))"
expect_error "has no blkmirror label"      bm dump "$T/c"
expect_error "no such file"                bm dump "$T/missing"
expect_error "has no blkmirror label"      bm clear "$T/c"
expect_usage "unknown balance algorithm"   bm configure -b fastest m0
expect_usage "usage: blkmirror configure"  bm configure m0
expect_usage "configure: -s sets the slice of a balance: give it with -b" bm configure -s 64k m0
expect_error "no mirror named 'nope'"      bm configure -b load nope
expect_error "no mirror named 'nope'"      bm status nope
expect_error "invalid mirror name"         bm status ../etc
expect_error "not running"                 bm stop m0
expect_error "no mirror named 'nope'"      bm stop nope
expect_usage "usage: blkmirror stop"       bm stop

after=$(cat "$T/a" "$T/b" "$T/c" | sha256sum)
[ "$before" = "$after" ] || fail "a failed command changed a component"
# The failed serve attempts left no socket behind and no server running.
[ ! -e "$T/s" ] || fail "a failed serve left a socket"
