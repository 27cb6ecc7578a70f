#!/usr/bin/env bash
# An online backup of the portal's database, safe while the portal runs
# (SQLite's backup API through the sqlite3 shell: a consistent copy, WAL
# included), checked with `PRAGMA integrity_check`, named by its time;
# the newest KEEP are kept.  deploy/systemd/cloche-portal-backup.timer runs
# it every 15 minutes.  docs/operations.md has the restore.
#
#   deploy/backup-portal.sh [--db /var/lib/cloche-portal/portal.db]
#                           [--dir /var/backups/cloche] [--keep 96]
set -euo pipefail
db=/var/lib/cloche-portal/portal.db dir=/var/backups/cloche keep=96
while (($#)); do
	case $1 in
	--db | --dir | --keep) (($# >= 2)) || { echo "backup-portal: $1 needs a value" >&2; exit 2; } ;;&
	--db) db=$2 ;;
	--dir) dir=$2 ;;
	--keep) keep=$2 ;;
	*) echo "backup-portal: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
	shift 2
done
[[ $keep =~ ^[1-9][0-9]*$ ]] || { echo "backup-portal: --keep must be a positive number" >&2; exit 2; }
[[ -s $db ]] || { echo "backup-portal: no database at $db" >&2; exit 1; }
mkdir -p -m 0700 "$dir"
out=$dir/portal-$(date -u +%Y%m%dT%H%M%SZ).db
# The backup API copies page by page and starts again if the portal writes
# meanwhile; a busy timeout rides out the portal's own short locks.
sqlite3 -bail "$db" ".timeout 10000" ".backup '$out.part'"
check=$(sqlite3 "$out.part" "PRAGMA integrity_check;")
[[ $check == ok ]] || { rm -f "$out.part"; echo "backup-portal: the copy fails its integrity check: $check" >&2; exit 1; }
chmod 0600 "$out.part"
mv "$out.part" "$out"
echo "$out"
# shellcheck disable=SC2012  # names are ours: portal-<UTC time>.db
ls -1t "$dir"/portal-*.db | tail -n +$((keep + 1)) | xargs -r rm -f
