# make install DESTDIR=... PREFIX=... copies the built binary, the man page
# and the systemd unit (ExecStart rewritten to the installed binary) without
# rebuilding anything; the installed binary runs; make uninstall removes
# what install put there and nothing else.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(basename "$(dirname "$BLKMIRROR")")
san=; [ "$build" = build-san ] && san=SAN=1
mk() { make -s -C "$top" BUILD="$build" $san "$@"; }
# The binary must be current (make first): install must copy it, not
# rebuild it.
mk -q "$build/blkmirror" || skip "$BLKMIRROR is not current: run make first"
want=$(mk version)
[ "$("$BLKMIRROR" --version)" = "blkmirror $want" ] || fail "$BLKMIRROR --version says '$("$BLKMIRROR" --version)', make version '$want'"
before=$(stat -c %Y.%s "$BLKMIRROR")

R=$T/root
out=$(mk install DESTDIR="$R" PREFIX=/opt/bm 2>&1) || fail "make install failed: $out"
[ "$(stat -c %Y.%s "$BLKMIRROR")" = "$before" ] || fail "make install rebuilt $BLKMIRROR"
! grep -qE "(^| )(cc|gcc|clang) " <<<"$out" || fail "make install compiled something: $out"
for f in sbin/blkmirror share/man/man8/blkmirror.8 lib/systemd/system/blkmirror@.service; do
  [ -f "$R/opt/bm/$f" ] || fail "make install did not install $f"
done
[ -x "$R/opt/bm/sbin/blkmirror" ] || fail "the installed binary is not executable"
[ "$(stat -c %a "$R/opt/bm/share/man/man8/blkmirror.8")" = 644 ] || fail "man page mode"
cmp -s "$BLKMIRROR" "$R/opt/bm/sbin/blkmirror" || fail "the installed binary differs from $BLKMIRROR"
[ "$("$R/opt/bm/sbin/blkmirror" --version)" = "blkmirror $want" ] || fail "installed --version"
unit=$R/opt/bm/lib/systemd/system/blkmirror@.service
grep -qx 'ExecStart=/opt/bm/sbin/blkmirror serve %i $BLKMIRROR_SERVE_OPTS' "$unit" ||
  fail "ExecStart does not name the installed binary: $(grep ExecStart "$unit")"
grep -qx "Type=notify" "$unit" || fail "the unit is not Type=notify"
man -l "$R/opt/bm/share/man/man8/blkmirror.8" 2>/dev/null | has "blkmirror" || fail "installed man page does not render"

# The unit as systemd reads it (when systemd-analyze is here): no warning.
if command -v systemd-analyze >/dev/null; then
  mkdir "$T/units"
  sed "s|/opt/bm/sbin/blkmirror|$R/opt/bm/sbin/blkmirror|" "$unit" >"$T/units/blkmirror@m0.service"
  v=$(systemd-analyze verify --man=no "$T/units/blkmirror@m0.service" 2>&1) || fail "systemd-analyze verify: $v"
  [ -z "$v" ] || fail "systemd-analyze verify warns: $v"
fi

# UNITDIR and MANDIR are honoured; uninstall removes only our files.
touch "$R/opt/bm/sbin/other"
out=$(mk install DESTDIR="$R" PREFIX=/usr UNITDIR=/lib/systemd/system 2>&1) || fail "install with UNITDIR: $out"
[ -f "$R/lib/systemd/system/blkmirror@.service" ] || fail "UNITDIR not honoured"
grep -q '^ExecStart=/usr/sbin/blkmirror ' "$R/lib/systemd/system/blkmirror@.service" || fail "ExecStart not /usr/sbin"
mk uninstall DESTDIR="$R" PREFIX=/opt/bm >/dev/null || fail "make uninstall failed"
for f in sbin/blkmirror share/man/man8/blkmirror.8 lib/systemd/system/blkmirror@.service; do
  [ ! -e "$R/opt/bm/$f" ] || fail "make uninstall left $f"
done
[ -e "$R/opt/bm/sbin/other" ] || fail "make uninstall removed a file that is not ours"
[ -f "$R/usr/sbin/blkmirror" ] || fail "uninstall of one PREFIX touched another"
echo ok
