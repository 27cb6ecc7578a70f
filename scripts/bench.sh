#!/usr/bin/env bash
# `make bench`: builds, makes sure the template exists, runs every
# bench/*.sh and leaves their figures in bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -s -j2 all
CLOCHE_TEMPLATE=$(rootfs/build-template.sh | tail -n 1)
export CLOCHE_TEMPLATE
for b in bench/*.sh; do
	echo "=== $b"
	bash "$b"
done
