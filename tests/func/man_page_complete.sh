# The manual covers the binary: every verb that `blkmirror help` lists has
# its own entry (a .SS heading) in man/blkmirror.8, and every option that
# `blkmirror help VERB` shows (long, and short ones, clusters such as -fn
# counted letter by letter) appears in that verb's entry; the manual
# renders without a warning.  Verbs documented but not in the binary are
# fine (binary within manual).
. "$(dirname "$0")/lib.sh"
need groff
MAN=$(cd "$(dirname "$0")/../.." && pwd)/man/blkmirror.8
[ -f "$MAN" ] || fail "no $MAN"

w=$(groff -man -Tutf8 -ww -z "$MAN" 2>&1) || fail "groff failed: $w"
[ -z "$w" ] || fail "groff warns: $w"
if command -v man >/dev/null; then
  w=$(MANWIDTH=80 man --warnings -l "$MAN" 2>&1 >/dev/null) || fail "man -l failed: $w"
  [ -z "$w" ] || fail "man -l warns: $w"
fi

verbs=$(bm help | sed -n 's/^ *\(usage: \)\{0,1\}blkmirror \([a-z][a-z-]*\).*/\2/p' | grep -vx VERB | sort -u)
[ "$(wc -w <<<"$verbs")" -ge 10 ] || fail "could not read the verb list from 'blkmirror help': $verbs"
for v in $verbs; do
  bm help "$v" >"$T/usage.$v" || fail "blkmirror help $v failed"
done

# One python pass: the manual's source cut at .SS/.SH headings, roff
# escapes removed, then each verb's options looked up in its own entry.
$PY - "$MAN" "$T" $verbs <<'PYEOF' || exit 1
import re, sys
man, tdir, verbs = sys.argv[1], sys.argv[2], sys.argv[3:]
src = open(man).read().split("\n")
entries, cur = {}, None
for line in src:
    m = re.match(r'\.(SS|SH)\s+"?([^"]*)"?\s*$', line)
    if m:
        cur = m.group(2).strip() if m.group(1) == "SS" else None
        if cur is not None:
            entries.setdefault(cur, [])
        continue
    if cur is not None:
        entries[cur].append(line)

def plain(lines):
    t = "\n".join(l for l in lines if not l.startswith('.\\"'))
    t = re.sub(r'\\f[BIRP]', '', t)
    t = t.replace('\\-', '-').replace('\\&', '')
    t = re.sub(r'^\.[A-Z]+\s?', '', t, flags=re.M)  # macro names
    return t.replace('"', ' ')

bad = []
for v in verbs:
    if v not in entries:
        bad.append("verb '%s' has no entry (.SS %s) in the manual" % (v, v))
        continue
    body = plain(entries[v])
    usage = open("%s/usage.%s" % (tdir, v)).read()
    longs = set(re.findall(r'(?<![\w-])--[a-z][a-z0-9-]*', usage))
    shorts = set()
    for cluster in re.findall(r'(?<![\w-])-([A-Za-z]+)\b', usage):
        shorts.update("-" + c for c in cluster)
    for o in sorted(longs):
        if not re.search(r'(?<![\w-])' + re.escape(o) + r'(?![\w-])', body):
            bad.append("%s: option %s is not in its manual entry" % (v, o))
    for o in sorted(shorts):
        if not re.search(r'(?<![\w-])' + re.escape(o) + r'(?![\w-])', body):
            bad.append("%s: option %s is not in its manual entry" % (v, o))
    print("ok: %s (%d long, %d short options)" % (v, len(longs), len(shorts)))
if bad:
    print("FAIL: " + "\nFAIL: ".join(bad), file=sys.stderr)
    sys.exit(1)
PYEOF
echo ok
