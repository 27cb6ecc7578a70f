# shellcheck shell=bash
# An X desktop on the host, for the tests and benchmarks that need no
# sandbox: a private Xvfb and Chromium windows on it.
#
#   x_free_display FIRST LAST   prints :N, the first N in FIRST..LAST with
#                               neither an X socket nor a lock file; fails if
#                               there is none
#   X_CHROMIUM_FLAGS            the flags of a Chromium window on such a
#                               display: tests/e2e/lib/browser.mjs's
#                               CHROMIUM_FLAGS and what a headed one needs
#                               there (no first-run infobar, no /dev/shm, no
#                               keyring)

x_free_display() {
	local n
	for ((n = $1; n <= $2; n++)); do
		[[ -e /tmp/.X11-unix/X$n || -e /tmp/.X$n-lock ]] || { echo ":$n"; return 0; }
	done
	return 1
}

# shellcheck disable=SC2034  # the callers'
X_CHROMIUM_FLAGS=(--no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
	--disable-component-update --disable-sync --test-type --disable-dev-shm-usage --password-store=basic)
