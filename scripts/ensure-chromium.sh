#!/bin/sh
# Make sure a headless Chromium is there for the browser tests of the HTML reports (tests/browser/).
# Installs Debian's `chromium` package with apt-get when it is missing and we are root; otherwise says why
# and leaves it: the browser tests then skip with that reason. Never fails the caller (exit 0 always).
set -u
for name in chromium chromium-browser google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then
        exit 0
    fi
done
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-chromium: no chromium and no root apt-get here; the browser tests will be skipped" >&2
    exit 0
fi
echo "ensure-chromium: installing Debian's chromium for the browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends chromium >/tmp/ensure-chromium.log 2>&1; then
    apt-get update -q >>/tmp/ensure-chromium.log 2>&1 || true
    apt-get install -y -q --no-install-recommends chromium >>/tmp/ensure-chromium.log 2>&1 || \
        echo "ensure-chromium: apt-get could not install chromium (see /tmp/ensure-chromium.log); the browser tests will be skipped" >&2
fi
exit 0
