# The libnbd transmission kept for TLS exports (lib/backends/nbd.c) still
# works: with BLKMIRROR_NBD_LIBNBD set every NBD component stays on it,
# and three NBD tests run through it (data on every component; a component
# whose server goes away and comes back; a server whose read replies cover
# half the buffer or one part twice: nbdw_cover, shared by both paths).
# That the variable selects the other path is checked in
# unit/test_nbd_backend (a backend opened with it has the other ops table).
set -euo pipefail
here=$(dirname "$0")
export BLKMIRROR_NBD_LIBNBD=1
for t in nbd_components nbd_component_reconnects nbd_short_read_reply; do
  bash "$here/$t.sh" || { echo "FAIL: $t through libnbd's transmission"; exit 1; }
done
