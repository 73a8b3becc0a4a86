# blkmirror --version, -V and `blkmirror version` print "blkmirror VERSION",
# VERSION being the VERSION file plus "+g<commit>" in a git checkout (what
# `make version` says); a tree without git (a tarball) says VERSION alone.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
file=$(cat "$top/VERSION")
[[ $file =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "VERSION holds '$file', not a version"
v=$(bm --version) || fail "--version failed"
[[ $v =~ ^blkmirror\ $file(\+g[0-9a-f]{12})?$ ]] || fail "--version says '$v'"
[ "$(bm -V)" = "$v" ] || fail "-V says '$(bm -V)', --version '$v'"
[ "$(bm version)" = "$v" ] || fail "version says '$(bm version)', --version '$v'"
bm help | has "blkmirror version" || fail "help does not list version"
[ "$(bm version --help)" = "usage: blkmirror version" ] || fail "version --help"
expect_usage "usage: blkmirror version" bm version extra
expect_usage "usage: blkmirror --version" bm --version extra
expect_usage "unknown option '--verbose'" bm --verbose
# The build of this tree says what make version says (when it is current).
if make -s -q -C "$top" BUILD="$(basename "$(dirname "$BLKMIRROR")")" \
     "$(basename "$(dirname "$BLKMIRROR")")/blkmirror" 2>/dev/null; then
  [ "$v" = "blkmirror $(make -s -C "$top" version)" ] || fail "--version '$v', make version '$(make -s -C "$top" version)'"
  if [ -e "$top/.git" ] && command -v git >/dev/null; then
    [ "$v" = "blkmirror $file+g$(git -C "$top" rev-parse --short=12 HEAD)" ] || fail "--version '$v' does not name the commit"
  fi
fi
# A tree without git (a tarball): VERSION alone, the same every time.
mkdir "$T/src"
cp "$top/Makefile" "$top/VERSION" "$T/src/"
[ "$(make -s -C "$T/src" version)" = "$file" ] || fail "without git, make version says '$(make -s -C "$T/src" version)'"
echo ok
