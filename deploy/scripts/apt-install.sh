# Sourced by the *-deps.sh scripts: apt_install PACKAGE... installs the Debian packages a script
# found missing, as root only, retrying once after `apt-get update` (a fresh machine's package lists
# may be stale or empty). The caller defines say and fail (its own log prefix); every refusal says
# what to run by hand.
apt_install() {
  local manual="install them yourself: apt-get install -y $* (Debian/Ubuntu), then run this script again"
  [ "$EUID" -eq 0 ] || fail "not root, cannot install; $manual"
  command -v apt-get >/dev/null || fail "no apt-get on this machine; $manual"
  say "apt-get install -y --no-install-recommends $*"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"; then
    say "install failed; running apt-get update once and retrying"
    DEBIAN_FRONTEND=noninteractive apt-get update || fail "apt-get update failed (no network or no package mirror?); $manual"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" ||
      fail "apt-get install failed even after apt-get update; $manual"
  fi
}
