# Usage errors of insert, remove and destroy exit 2 with one line, before
# anything is looked at.
. "$(dirname "$0")/lib.sh"
mkimg 16 a
expect_usage "usage: blkmirror insert" bm insert m0
expect_usage "usage: blkmirror insert" bm insert
expect_usage "insert: -p 'x' is not a priority from 0 to 255" bm insert -p x m0 "$T/a"
expect_usage "insert: -p '256' is not a priority" bm insert -p 256 m0 "$T/a"
expect_usage "insert: option '-p' needs a value" bm insert m0 "$T/a" -p
expect_usage "insert: unknown option '--nope'" bm insert --nope m0 "$T/a"
expect_usage "insert: --wait waits for a copy, and a component inserted with -i is not copied" bm insert -i --wait m0 "$T/a"
expect_usage "invalid mirror name '-x'" bm insert -- -x "$T/a"
expect_usage "usage: blkmirror remove" bm remove m0
expect_usage "remove: unknown option '-f'" bm remove -f m0 "$T/a"
expect_usage "usage: blkmirror destroy" bm destroy
expect_usage "usage: blkmirror destroy" bm destroy m0 m1
expect_usage "destroy: unknown option '-x'" bm destroy -x m0
expect_error "no mirror named 'm0'" bm destroy m0
expect_error "no mirror named 'm0'" bm remove m0 "$T/a"
[ -z "$(ls -A "$BLKMIRROR_STATE_DIR" 2>/dev/null)" ] || fail "usage errors left state: $(ls "$BLKMIRROR_STATE_DIR")"
