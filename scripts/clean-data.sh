#!/usr/bin/env bash
# `make clean-data`: `make stop`, then drops the all-in-one's data: the
# portal's database and token key, the CLI config it wrote, and any sandbox
# directory left in the pool.  Templates and the pool image stay.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/aio.sh
. scripts/lib/pool.sh

scripts/stop.sh
rm -rf "$AIO_STATE"
if CLOCHE_POOL=$AIO_POOL pool_ensure 2>/dev/null; then
	rm -f "$AIO_ENV"
	CLOCHE_POOL=$AIO_POOL pool_umount || true
fi
aio_say "removed the portal's database and key ($AIO_STATE) and $AIO_ENV"
