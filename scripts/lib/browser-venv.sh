#!/usr/bin/env bash
# Prints the path of a Python with Selenium (pinned), installing it into a
# venv under ~/.cache/play when missing. The browser tests
# (tests/dashboard_browser_e2e.rs) call it; they drive Debian's chromium
# through Debian's chromium-driver, so Selenium never downloads a driver.
set -euo pipefail
SELENIUM_VERSION=4.50.0
venv=${XDG_CACHE_HOME:-$HOME/.cache}/play/selenium-$SELENIUM_VERSION
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import selenium' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "selenium==$SELENIUM_VERSION" >&2
fi
echo "$venv/bin/python"
