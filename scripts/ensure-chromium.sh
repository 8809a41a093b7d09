#!/usr/bin/env bash
# The browser tests (npm run test:browser) drive Debian's Chromium through playwright-core: no
# browser download. Installs the `chromium` package when /usr/bin/chromium is missing (as root,
# or with sudo); does nothing when it is there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
run() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
export DEBIAN_FRONTEND=noninteractive
run apt-get update -qq
run apt-get install -y -qq --no-install-recommends chromium > /dev/null
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null)"
