# Sourced by benchmark scripts: ensure_busybox_image builds the test image
# `play-test/busybox:1` from Debian's busybox-static when it is missing,
# with every applet the binary has, so that an image a benchmark built is
# one the test suite can use too (the tests build it only when it is
# missing; an image with fewer applets made their `httpd` services fail).
# shellcheck shell=bash

ensure_busybox_image() {
  docker image inspect play-test/busybox:1 >/dev/null 2>&1 && return 0
  [ -x /bin/busybox ] || { echo "needs /bin/busybox (Debian package busybox-static)" >&2; return 1; }
  local root
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,tmp,etc,www}
  cp /bin/busybox "$root/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
  done
  echo 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"; echo 'root:x:0:' >"$root/etc/group"
  tar -C "$root" -c . | docker import --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/bin' - play-test/busybox:1 >/dev/null
  rm -rf "$root"
}
