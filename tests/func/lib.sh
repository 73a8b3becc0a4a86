# Helpers for functional tests: sourced by tests/func/*.sh.
#
# Each test gets its own directory ($T) and state directory, and everything
# it starts (servers, nbdkit) is killed on exit.  Tests drive the real CLI
# ($BLKMIRROR) and real NBD clients.
set -euo pipefail

BLKMIRROR=${BLKMIRROR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/blkmirror}
TEST_TOOLS=${TEST_TOOLS:-$(dirname "$BLKMIRROR")/tests}
T=$(mktemp -d /tmp/bmtest.XXXXXX)
export BLKMIRROR_STATE_DIR=$T/state
PIDS=()
MIB=$((1024 * 1024))

cleanup() {
  local rc=$?
  # Every process of this test, and only those: they carry its state
  # directory in their environment (a pid recorded in PIDS may have ended
  # and been reused by another test's process; nbdkit's eval plugin runs
  # children nobody recorded).
  local p
  for p in $(grep -lzxF "BLKMIRROR_STATE_DIR=$T/state" /proc/[0-9]*/environ 2>/dev/null |
             cut -d/ -f3); do
    [ "$p" != $$ ] && kill -9 "$p" 2>/dev/null || true
  done
  true
  # File systems mounted under $T (deepest first) before their loop
  # devices go; FUSE mounts (attach's nbdfuse, killed above) after them.
  umount_under_t() {
    local m
    for m in $(awk -v t="$T/" -v fuse="$1" 'index($2, t) == 1 &&
               (($3 ~ /^fuse/) == (fuse == "fuse")) {print $2}' /proc/mounts | sort -r); do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  }
  umount_under_t other
  # loop devices over files of this test (losetup -j wants a file, not a
  # directory, so list them all and match the backing path)
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | while read -r d f; do
    case $f in "$T"/*) losetup -d "$d" 2>/dev/null || true ;; esac
  done
  umount_under_t fuse
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }
need() { command -v "$1" >/dev/null || skip "$1 is not installed"; }

bm() { "$BLKMIRROR" "$@"; }

# Debian's python3 has the libnbd bindings (python3-libnbd), whatever
# python3 comes first on the PATH.
PY=/usr/bin/python3
nbdsh() { PATH=/usr/bin:$PATH command nbdsh "$@"; }

# fio writes its verify state files into the current directory: keep them
# in the test's own.
fio() { (cd "$T" && command fio "$@"); }

# grep -q for pipelines: `cmd | grep -q X` stops reading at the first
# match, and under pipefail the writer's broken pipe then fails the
# pipeline although X was there (bash's echo writes a pipe line by line:
# clear_forgets failed so in CI).  has reads to the end.
has() { grep "$@" >/dev/null; }

# Runs a command that must fail with exit status 1 and a message matching
# the pattern; prints what it said.
expect_error() {
  local pattern=$1; shift
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ $rc -eq 1 ] || fail "'$*' exited $rc, want 1 (output: $out)"
  echo "$out" | has -E "$pattern" || fail "'$*' said '$out', want /$pattern/"
  [ "$(echo "$out" | wc -l)" -le 2 ] || fail "'$*' said more than one line: $out"
  echo "ok: $* -> $out"
}

# Runs a command that must be refused as a wrong command line: exit status
# 2 and exactly one line matching the pattern.
expect_usage() {
  local pattern=$1; shift
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2 (output: $out)"
  echo "$out" | has -E "$pattern" || fail "'$*' said '$out', want /$pattern/"
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "'$*' said more than one line: $out"
  echo "ok: $* -> $out"
}

# Creates sparse image files of the given size (MiB): mkimg 64 a b
mkimg() {
  local size=$1; shift
  for f in "$@"; do truncate -s "${size}M" "$T/$f"; done
}

# flip_byte FILE OFFSET: the byte there, every bit inverted (so always a
# change: writing a fixed value leaves a byte that already held it as it was)
flip_byte() {
  local b; b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  [ -n "$b" ] || fail "flip_byte: nothing at $2 in $1"
  printf "\\$(printf '%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

uri() { echo "nbd+unix:///${2:-$1}?socket=$T/$1.sock"; }

# serve NAME [extra args]: starts the server, waits for its socket.
serve() {
  local name=$1; shift
  "$BLKMIRROR" serve "$name" --socket "$T/$name.sock" "$@" >>"$T/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  eval "SERVER_PID_${name//[^a-zA-Z0-9_]/_}=$pid"
  for _ in $(seq 1 200); do
    if [ -S "$T/$name.sock" ]; then
      local rc=0; "$BLKMIRROR" status "$name" >/dev/null 2>&1 || rc=$?
      { [ $rc -eq 0 ] || [ $rc -eq 2 ]; } && return 0
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$T/$name.log" >&2; fail "server for $name died"; }
    sleep 0.05
  done
  fail "server for $name did not start"
}

server_pid() { eval "echo \$SERVER_PID_${1//[^a-zA-Z0-9_]/_}"; }

# stop NAME: blkmirror stop, and wait for the server to exit 0.
stop() {
  local name=$1; shift
  local pid; pid=$(server_pid "$name")
  "$BLKMIRROR" stop "$@" "$name" >/dev/null || fail "blkmirror stop $name failed"
  local rc=0
  wait "$pid" || rc=$?
  [ $rc -eq 0 ] || { cat "$T/$name.log" >&2; fail "server for $name exited $rc"; }
}

# slow_trim MIB_PER_S IO_TIMEOUT SIZE TRIM: mirror m0 of a file and a
# zerowriting_disk z at MIB_PER_S (both SIZE MiB of old data, 0x33),
# served with --io-timeout IO_TIMEOUT, and a client trimming the first
# TRIM MiB in one request, in the background (output in $T/q.out)
slow_trim() {
  mkimg "$3" a
  head -c $(($3 * MIB)) /dev/zero | tr '\0' '\063' >"$T/a"
  cp "$T/a" "$T/z.img"
  zerowriting_disk z "$T/z.img" "$1"
  bm label -n m0 "$T/a" "$(disk_uri z)"
  serve m0 --io-timeout "$2"
  qemu-io -f raw "$(uri m0)" -c "discard 0 $4M" >"$T/q.out" 2>&1 &
  PIDS+=("$!")
}

# zero_errdisk NAME DELAY: a 128 MiB memory disk whose zeroing takes
# DELAY each and fails (EIO) once $T/NAME.fail exists; its requests logged
# (zero_pieces NAME counts the zeroings it got), on $(disk_uri NAME)
zero_errdisk() {
  disk "$1" 128M --filter=log --filter=error --filter=delay logfile="$T/$1.reqlog" \
    error-zero=EIO error-zero-rate=100% error-zero-file="$T/$1.fail" delay-zero="$2"
}
zero_pieces() { grep -c "Zero id=.* offset=" "$T/$1.reqlog" 2>/dev/null || true; }
# zero_fails_after NAME N: waits (5 s at most) until zero_errdisk NAME got
# N zeroings, then makes the next ones fail
zero_fails_after() {
  for _ in $(seq 1 100); do [ "$(zero_pieces "$1")" -ge "$2" ] && break; sleep 0.05; done
  [ "$(zero_pieces "$1")" -ge "$2" ] || fail "$1 did not get $2 zero pieces in 5 s"
  touch "$T/$1.fail"
}

# slow_zeroing DISK OFFSET LENGTH: a client (pid in $zeroer, output in
# $T/z.out) zeroes LENGTH at OFFSET (qemu-io units) of mirror m0 in the
# background; returns once DISK (a disk with --filter=log, logfile
# $T/DISK.reqlog) has its first zero piece.
slow_zeroing() {
  qemu-io -f raw "$(uri m0)" -c "write -z $2 $3" >"$T/z.out" 2>&1 &
  zeroer=$!
  PIDS+=("$zeroer")
  for _ in $(seq 1 100); do [ "$(zero_pieces "$1")" -ge 1 ] && break; sleep 0.05; done
  [ "$(zero_pieces "$1")" -ge 1 ] || fail "the zeroing did not reach $1"
}
# write_beside_zeroing OFFSET WHO: a client writes 64 KiB of 0x62 at
# OFFSET of m0, which WHO (a repair, a check) waits to hold while
# slow_zeroing runs: the write must end while the zeroing still runs, in
# under 3 s (its time in $ms).
write_beside_zeroing() {
  local start; start=$(date +%s%N)
  qemu-io -f raw "$(uri m0)" -c "write -P 0x62 $1 64k" >"$T/w.out" 2>&1 ||
    { cat "$T/w.out"; fail "the write failed"; }
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "the write took $ms ms" >&2
  kill -0 "$zeroer" 2>/dev/null || fail "the zeroing ended before the write did: nothing was shown"
  [ "$ms" -lt 3000 ] || fail "the write took $ms ms: it waited behind $2 for the zeroing"
}

# zero_long_client COMPONENT0 COMPONENT1: mirror m0 of the two, served, and a
# client (pid in $client, output in $T/q.out) zeroing 96 MiB from 8 MiB
zero_long_client() {
  bm label -n m0 "$1" "$2"
  serve m0
  qemu-io -f raw "$(uri m0)" -c 'write -z 8M 96M' >"$T/q.out" 2>&1 &
  client=$!
  PIDS+=("$client")
}

# stop_within NAME MS WHY: `stop -f NAME` must end cleanly within MS ms
# (WHY says what bounds it), with no request left unanswered; the time
# it took in $stop_ms.
stop_within() {
  local start; start=$(date +%s%N)
  stop "$1" -f
  stop_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "stop took $stop_ms ms" >&2
  grep -q "did not complete" "$T/$1.log" && fail "requests were left unanswered: $(cat "$T/$1.log")"
  [ "$stop_ms" -lt "$2" ] || fail "stop took $stop_ms ms ($3)"
}
# stop_gives_up NAME URI MS WHY [MESSAGE]: the component URI, still in
# service, keeps the stop of NAME waiting; the stop ends within MS ms
# (stop_within) by giving the component up, as the log says (MESSAGE: the
# start of the reason it gives).
stop_gives_up() {
  local st
  st=$(bm status "$1") || fail "the slow component was given up before the stop: $st"
  stop_within "$1" "$3" "$4"
  grep -q "ComponentDisconnected $2${5:+: $5}" "$T/$1.log" ||
    fail "the log does not say the slow component was given up at the stop: $(cat "$T/$1.log")"
}

# wait_complete NAME: until status says COMPLETE (sync done), 60 s at most.
wait_complete() {
  for _ in $(seq 1 600); do
    local out; out=$(bm status "$1" 2>/dev/null) || true
    grep -q COMPLETE <<<"$out" && return 0
    sleep 0.1
  done
  bm status "$1" >&2 || true
  tail -n 20 "$T/$1.log" >&2 || true
  fail "$1 did not become COMPLETE"
}

# wait_status NAME PATTERN [SECONDS]: waits (default 30 s) until the
# output of `status NAME` matches the grep PATTERN; the last output is in
# $status_out; fails the test, showing it, if it never does.
wait_status() {
  local tries=$(( ${3:-30} * 10 ))
  for _ in $(seq 1 "$tries"); do
    status_out=$(bm status "$1" 2>&1) || true
    grep -q "$2" <<<"$status_out" && return 0
    sleep 0.1
  done
  fail "status of $1 never matched '$2': $status_out"
}

# served_while_stuck PID OUT WHAT FN: the client PID (its output in OUT)
# waits on a request that one component holds while it answers the
# others; FN I is called in a loop meanwhile (I = 0, 1, ...: another
# request, which must succeed).  Fails unless the client ends without an
# error within 15 s, after io-timeout (2 s), with 3 other requests or
# more answered meanwhile, and status says why the component was given up.
served_while_stuck() {
  local pid=$1 out=$2 what=$3 fn=$4 start i=0 ms
  start=$(date +%s%N)
  while kill -0 "$pid" 2>/dev/null; do
    [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 15000 ] ||
      fail "the stuck $what was not served elsewhere within 15 s (io-timeout 2 s)"
    "$fn" "$i" || fail "another $what failed while one was stuck"
    i=$((i + 1))
  done
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  wait "$pid" || { cat "$out"; fail "the stuck $what failed"; }
  grep -qiE 'error|fail' "$out" && { cat "$out"; fail "client saw an error"; }
  [ "$i" -ge 3 ] || fail "only $i other requests while one was stuck: the case was not shown"
  [ "$ms" -ge 1900 ] || fail "given up after $ms ms, before the io-timeout (2 s)"
  local st
  st=$(bm status m0) && fail "status exited 0 with a component given up: $st"
  grep -q "DISCONNECTED: a request unanswered for 2 s while others were answered" <<<"$st" ||
    fail "status does not say why: $st"
}

# The data area of a component image: all but the last 1 MiB (metadata).
data_size() { echo $(( ($(stat -c %s "$1") / 4096 * 4096) - MIB )); }

# same_data A B [bytes]: the data areas of two components are identical.
same_data() {
  local n=${3:-$(data_size "$1")}
  cmp -n "$n" "$1" "$2" >/dev/null || fail "data areas of $1 and $2 differ"
}

# file_sha FILE [bytes]
file_sha() { head -c "${2:-$(stat -c %s "$1")}" "$1" | sha256sum | cut -d' ' -f1; }

# disk NAME SIZE [--filter=F ...] [param=value ...]: an nbdkit memory disk on a Unix
# socket; its URI is $(disk_uri NAME).
disk() {
  local name=$1 size=$2; shift 2
  command -v nbdkit >/dev/null || skip "nbdkit is not installed"
  local opts=() params=()
  for a in "$@"; do case $a in --*) opts+=("$a") ;; *) params+=("$a") ;; esac; done
  nbdkit -U "$T/$name.disk.sock" -P "$T/$name.disk.pid" "${opts[@]}" memory "$size" \
    "${params[@]}" >>"$T/$name.disk.log" 2>&1 || fail "nbdkit for $name did not start"
  for _ in $(seq 1 100); do [ -s "$T/$name.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$name.disk.pid")")
}
disk_uri() { echo "nbd+unix:///?socket=$T/$1.disk.sock"; }
# filled_pair SIZE FILL: memory disks d0 and d1 of SIZE, their first FILL
# bytes random (a never-written memory disk is all holes, which reads
# faster than data); their URIs in u0 and u1 (for bench).
filled_pair() {
  disk d0 "$1"
  disk d1 "$1"
  u0=$(disk_uri d0) u1=$(disk_uri d1)
  for u in "$u0" "$u1"; do
    head -c "$2" /dev/urandom | nbdcopy - "$u" || fail "cannot fill $u"
  done
}
# bench_fell SIZE FIGURE: `bench --size SIZE $u0 $u1` must exit 3 (a
# figure fell) and name FIGURE; its output in $out, FIGURE's line in $line.
bench_fell() {
  local rc=0
  out=$(bm bench --size "$1" "$u0" "$u1" 2>&1) || rc=$?
  echo "$out"
  [ $rc -eq 3 ] || fail "bench exited $rc, want 3 (a figure fell)"
  line=$(grep "^REGRESSION: $2" <<<"$out") || fail "'$2' is not named as fallen"
}
# emudisk NAME param=value...: bench's emulated disk (build/diskemu.so:
# one head, a fixed rate, requests served one after another) on
# $(disk_uri NAME); skips the test when it is not built.
emudisk() {
  local name=$1; shift
  local emu; emu=$(dirname "$BLKMIRROR")/diskemu.so
  [ -e "$emu" ] || skip "build/diskemu.so is missing (make)"
  command -v nbdkit >/dev/null || skip "nbdkit is not installed"
  nbdkit -U "$T/$name.disk.sock" -P "$T/$name.disk.pid" "$emu" "$@" \
    >>"$T/$name.disk.log" 2>&1 || fail "nbdkit for $name did not start"
  for _ in $(seq 1 100); do [ -s "$T/$name.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$name.disk.pid")")
}
# stream_mirror MIRROR DISK0 DISK1 PARAM...: emulated disks DISK0 and
# DISK1 (emudisk PARAM...) labelled as MIRROR, served, balance `stream`.
stream_mirror() {
  local m=$1 d0=$2 d1=$3; shift 3
  emudisk "$d0" "$@"
  emudisk "$d1" "$@"
  bm label -n "$m" "$(disk_uri "$d0")" "$(disk_uri "$d1")"
  serve "$m"
  bm configure -b stream "$m"
}
# qd1_stream MIRROR [DEST]: one sequential stream of 128 KiB reads, one in
# flight, over the whole of MIRROR into DEST (default: nowhere)
qd1_stream() {
  nbdcopy -C 1 -T 1 --requests=1 --request-size=131072 --no-extents "$(uri "$1")" "${2:-null:}"
}
# filedisk NAME IMAGE [--filter=F ...] [param=value ...]: nbdkit serving
# the file IMAGE on $(disk_uri NAME);
# call it again to bring the disk back after disk_kill NAME
filedisk() {
  local name=$1 img=$2; shift 2
  local opts=() params=()
  for a in "$@"; do case $a in --*) opts+=("$a") ;; *) params+=("$a") ;; esac; done
  rm -f "$T/$name.disk.sock" "$T/$name.disk.pid"
  nbdkit -U "$T/$name.disk.sock" -P "$T/$name.disk.pid" "${opts[@]}" file "$img" \
    "${params[@]}" >>"$T/$name.disk.log" 2>&1 || fail "nbdkit for $name did not start"
  set -- "$name"
  for _ in $(seq 1 100); do [ -s "$T/$1.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$1.disk.pid")")
}
disk_kill() { kill -9 "$(cat "$T/$1.disk.pid")"; }
# wait_sync_pct NAME PCT: until status shows a copy at PCT% or more (10 s)
wait_sync_pct() {
  local pct=
  for _ in $(seq 1 100); do
    pct=$({ bm status "$1" || true; } | sed -n 's/.*SYNCHRONIZING, \([0-9]*\)%.*/\1/p')
    [ -n "$pct" ] && [ "$pct" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no copy of $1 reached $2% (status: $(bm status "$1"))"
}
# wait_clean NAME: until `list` no longer says DIRTY (the idle clean, 20 s)
wait_clean() {
  local out=
  for _ in $(seq 1 200); do
    out=$(bm list "$1") || true
    grep -q "Flags: DIRTY" <<<"$out" || return 0
    sleep 0.1
  done
  fail "$1 was never marked clean: $out"
}
# busy_older_copy: on nbd_file_mirror's m0, kept busy (keep_writing:
# region 0 every 0.2 s, never idle, so no label is written), $T/a.old is
# a copy of a taken with 0x11 at 8M; then 0x33 goes there and the settle
# pass clears 8M's bit; $seq_then is the copy's label seq
busy_older_copy() {
  qemu-io -f raw "$u" -c 'write -P 0x55 16M 32M' >/dev/null  # data to copy
  keep_writing m0
  qemu-io -f raw "$u" -c 'write -P 0x11 8M 1M' -c flush >/dev/null
  cp --sparse=always "$T/a.img" "$T/a.old"
  seq_then=$(bm dump "$T/a.old" | sed -n 's/^ *Seq: //p')
  qemu-io -f raw "$u" -c 'write -P 0x33 8M 1M' -c flush >/dev/null
  for _ in $(seq 1 200); do [ "$(bitmap_dirty m0)" = 1 ] && break; sleep 0.1; done
  [ "$(bitmap_dirty m0)" = 1 ] || fail "the settle pass did not clear 8M's bit: $(bm list m0)"
}
# bitmap_dirty NAME: how many of the bitmap's regions `list` says are dirty
bitmap_dirty() { bm list "$1" | sed -n 's/.*Bitmap: .* \([0-9]*\) dirty.*/\1/p' | sed -n 1p; }
# reads_newest PATTERN OFFSET LEN: m0 reads round-robin, and four reads
# of the range (so through every component of two) hold PATTERN
reads_newest() {
  bm configure -b round-robin m0 || fail "configure -b round-robin"
  for _ in 1 2 3 4; do
    qemu-io -f raw "$(uri m0)" -c "read -P $1 $2 $3" >"$T/r.out" 2>&1 ||
      fail "read: $(cat "$T/r.out")"
    has "Pattern verification failed" "$T/r.out" &&
      fail "a read of $2+$3 returned old data: $(cat "$T/r.out")"
  done
  return 0
}
# nbd_file_mirror: m0 of a (the file $T/a.img, 64 MiB, served by nbdkit
# as $(disk_uri a), which can be killed and brought back) and the file b,
# 1 MiB bitmap regions, served with --io-timeout 5; $A and $u are set
nbd_file_mirror() {
  truncate -s 64M "$T/a.img"
  mkimg 64 b
  filedisk a "$T/a.img"
  A=$(disk_uri a)
  bm label -n -r 1M m0 "$A" "$T/b" >/dev/null
  serve m0 --io-timeout 5
  u=$(uri m0)
}
# zerowriting_disk NAME IMAGE MIB_PER_S: nbdkit serving IMAGE on
# $(disk_uri NAME), one request at a time, every write taking its length
# at MIB_PER_S; no zero, trim or extents of its own (nbdkit zeroes by
# writing, so zeroing is as slow as writing)
zerowriting_disk() {
  local img=$2 bps=$(($3 * MIB))
  command -v nbdkit >/dev/null || skip "nbdkit is not installed"
  nbdkit -U "$T/$1.disk.sock" -P "$T/$1.disk.pid" eval \
    get_size="echo $(stat -c %s "$img")" can_write='exit 0' can_flush='exit 0' \
    thread_model='echo serialize_all_requests' flush='exit 0' \
    pread="dd if=$img skip=\$4 count=\$3 iflag=skip_bytes,count_bytes bs=1M status=none" \
    pwrite="sleep \$(awk -v n=\$3 'BEGIN { print n / $bps }'); dd of=$img seek=\$4 conv=notrunc oflag=seek_bytes bs=1M iflag=fullblock status=none" \
    >>"$T/$1.disk.log" 2>&1 || fail "nbdkit for $1 did not start"
  for _ in $(seq 1 100); do [ -s "$T/$1.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$1.disk.pid")")
}

# ra_line SERVER WHAT: the read-ahead's summary line "ra: WHAT..." that
# SERVER printed at its stop (run with BM_RA_DEBUG=1); shown on stderr,
# fails the test if there is none.
ra_line() {
  local line
  line=$(grep -m1 "^ra: $2" "$T/$1.log") || fail "$1 printed no read-ahead summary (ra: $2)"
  echo "$line" >&2
  echo "$line"
}
# ra_count LINE WORDS: the number just before WORDS in a summary line
# ("ra: 640 reads served (80.0 MiB, ..." : ra_count "$line" "reads served"
# is 640, ra_count "$line" "MiB," is 80.0); empty if WORDS is not there.
ra_count() { sed -n "s/.*[ (]\([0-9.]*\) $2.*/\1/p" <<<"$1"; }

# hold_client ID URI: an NBD client (qemu-io reading commands from a FIFO)
# that stays connected until release_client ID; returns once it has read
# from the export, so it is surely connected.
hold_client() {
  local id=$1 u=$2 fd
  command -v qemu-io >/dev/null || skip "qemu-io is not installed"
  mkfifo "$T/$id.in"
  qemu-io -f raw "$u" <"$T/$id.in" >"$T/$id.out" 2>&1 &
  PIDS+=("$!")
  eval "CLIENT_PID_$id=$!"
  exec {fd}>"$T/$id.in"
  eval "CLIENT_FD_$id=$fd"
  echo "read 0 4k" >&"$fd"
  for _ in $(seq 1 200); do
    grep -q "read 4096/4096" "$T/$id.out" && return 0
    sleep 0.05
  done
  cat "$T/$id.out" >&2
  fail "client $id did not connect"
}
release_client() {
  local fd pid
  eval "fd=\$CLIENT_FD_$1 pid=\$CLIENT_PID_$1"
  exec {fd}>&-
  wait "$pid" 2>/dev/null || true
}

# hangdisk NAME SIZE_MIB [OFFSET|write:OFFSET|flush]: a disk that stops
# answering while $T/NAME.hang exists (hang NAME / answer NAME), backed by
# $T/NAME.img, through nbdkit's eval plugin; URI $(disk_uri NAME).  With
# OFFSET, only requests that start at OFFSET stop, and the others are
# answered meanwhile (one stuck sector, a lost reply); with write:OFFSET,
# only writes there (reads answered); with "flush", only flushes.  (nbdkit 1.32's pause filter
# aborts now and then when a client closes a connection whose requests it
# holds, which is exactly what a mirror does to a component that hangs.)
# Every write's offset is appended to $T/NAME.writes as it arrives.
hangdisk() {
  local name=$1 mib=$2 at=${3:-}
  local wait="while [ -e $T/$1.hang ]; do sleep 0.05; done; [ -d $T ] || exit 1"
  local model=serialize_all_requests flush=$wait rwait
  if [ "$at" = flush ]; then
    model=parallel flush=$wait wait=true
  elif [ -n "$at" ]; then
    wait="if [ \$4 = ${at#write:} ]; then $wait; fi"
    model=parallel flush=true
  fi
  rwait=$wait
  case $at in write:*) rwait=true ;; esac
  command -v nbdkit >/dev/null || skip "nbdkit is not installed"
  truncate -s "${mib}M" "$T/$name.img"
  nbdkit -U "$T/$name.disk.sock" -P "$T/$name.disk.pid" eval \
    get_size="echo $((mib * MIB))" can_write='exit 0' can_flush='exit 0' \
    can_multi_conn='exit 0' thread_model="echo $model" flush="$flush" \
    pread="$rwait; dd if=$T/$name.img skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
    pwrite="echo \$4 >>$T/$name.writes; $wait; dd of=$T/$name.img seek=\$4 conv=notrunc oflag=seek_bytes status=none" \
    >>"$T/$name.disk.log" 2>&1 || fail "nbdkit for $name did not start"
  for _ in $(seq 1 100); do [ -s "$T/$name.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$name.disk.pid")")
}
# fuse_file NAME: disk NAME (hangdisk, filedisk) as a local file,
# $T/NAME.fuse/nbd, through nbdfuse: a file whose requests the kernel
# holds while the disk hangs (a hung disk, an NFS server gone)
fuse_file() {
  command -v nbdfuse >/dev/null || skip "nbdfuse is not installed"
  mkdir -p "$T/$1.fuse"
  nbdfuse "$T/$1.fuse" "$(disk_uri "$1")" >>"$T/$1.nbdfuse.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -f "$T/$1.fuse/nbd" ] && return 0; sleep 0.05; done
  skip "nbdfuse did not mount (FUSE unavailable?)"
}
# waiting_verb NAME CMD...: runs CMD (output in $T/NAME.out) in the
# background ($waiting: its pid) and fails unless it is still running
# 0.5 s later (waiting on a component that hangs)
waiting_verb() {
  local name=$1; shift
  "$@" >"$T/$name.out" 2>&1 &
  waiting=$!
  sleep 0.5
  kill -0 "$waiting" 2>/dev/null || { cat "$T/$name.out"; fail "$name ended at once: the test shows nothing"; }
}
# answers_fast MIRROR WHY: status and list of MIRROR answer within 1 s,
# naming $T/a, while WHY
answers_fast() {
  local verb out t0 ms
  for verb in status list; do
    t0=$(date +%s%N)
    out=$(timeout 10 "$BLKMIRROR" $verb "$1" 2>&1) || true
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$ms" -lt 1000 ] || fail "$verb took $ms ms while $2"
    has "$T/a" <<<"$out" || fail "$verb: $out"
  done
}
hang() { touch "$T/$1.hang"; }
answer() { rm -f "$T/$1.hang"; }

# faildisk NAME SIZE_MIB: a disk backed by $T/NAME.img (nbdkit's eval
# plugin, URI $(disk_uri NAME)) whose writes that start at OFFSET fail
# with EIO after `fail_writes NAME OFFSET`, until `take_writes NAME`;
# every other request is served.  Every write's offset is appended to
# $T/NAME.writes.
faildisk() {
  local name=$1 mib=$2 f=$T/$1.fail
  command -v nbdkit >/dev/null || skip "nbdkit is not installed"
  truncate -s "${mib}M" "$T/$name.img"
  nbdkit -U "$T/$name.disk.sock" -P "$T/$name.disk.pid" eval \
    get_size="echo $((mib * MIB))" can_write='exit 0' can_flush='exit 0' \
    can_multi_conn='exit 0' thread_model='echo parallel' flush=true \
    pread="dd if=$T/$name.img skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
    pwrite="echo \$4 >>$T/$name.writes; if [ -e $f ] && [ \$4 = \"\$(cat $f)\" ]; then echo 'EIO refused' >&2; exit 1; fi; dd of=$T/$name.img seek=\$4 conv=notrunc oflag=seek_bytes status=none" \
    >>"$T/$name.disk.log" 2>&1 || fail "nbdkit for $name did not start"
  for _ in $(seq 1 100); do [ -s "$T/$name.disk.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$name.disk.pid")")
}
fail_writes() { echo "$2" >"$T/$1.fail"; }
take_writes() { rm -f "$T/$1.fail"; }
# bitmap_block COMPONENT_URI_OR_PATH: the offset of the component's first
# bitmap block (the one after the bitmap's header), from dump
bitmap_block() {
  local at
  at=$(bm dump "$1" | sed -n 's/.*Bitmap: [0-9]* bytes at \([0-9]*\),.*/\1/p')
  [ -n "$at" ] || fail "no bitmap offset in the dump of $1"
  echo $((at + 4096))
}
# keep_writing MIRROR: a background writer ($writer) of 64 KiB at offset 0
# of MIRROR every 0.2 s (qemu-io), until $T/stop exists; it exits 1 at its
# first failed write
keep_writing() {
  rm -f "$T/stop"
  local u; u=$(uri "$1")
  (
    i=0
    while [ ! -e "$T/stop" ]; do
      qemu-io -f raw "$u" -c "write -P $((i % 200 + 1)) 0 64k" >/dev/null || exit 1
      i=$((i + 1))
      sleep 0.2
    done
  ) &
  writer=$!
}
