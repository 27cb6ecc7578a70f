#!/usr/bin/env bash
# Benchmark: cloche's mcp-browser against @playwright/mcp (pinned in
# bench/browser-pages/package-lock.json) on real documentation pages that
# ship in Debian packages (bench/browser-pages/pages.tsv), both driving
# /usr/bin/chromium headless on the host: no sandbox, no pool, no runsc.
# Per page and server: browser_navigate, browser_snapshot several times,
# the characters and refs of a snapshot, and whether a sentence from deep in
# the page is reachable (in the snapshot, by continuation, by browser_find).
# Prints a table per page and the size ratios; writes
# bench/results/browser-pages.json.  About 2-3 minutes (docs/benchmarks.md).
#
#   BROWSER_PAGES_SNAPSHOTS   browser_snapshot calls per page and server, the
#                             first a warm-up (3; 2 with CLOCHE_BENCH_QUICK=1)
#   BROWSER_PAGES_ONLY        only these pages (comma-separated names)
#   BROWSER_PAGES_DUMP        a directory: each server's snapshot of each page
#                             is written there (NAME.ours.txt, NAME.playwright.txt)
#   BROWSER_PAGES_MCP_BROWSER another mcp-browser binary to measure (default:
#                             build/bin/mcp-browser, built first)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
root=$PWD

dir=bench/browser-pages
out=bench/results/browser-pages.json
snapshots=${BROWSER_PAGES_SNAPSHOTS:-$([[ ${CLOCHE_BENCH_QUICK:-0} == 1 ]] && echo 2 || echo 3)}
chromium=/usr/bin/chromium
load_start=$(cut -d ' ' -f 1-3 /proc/loadavg)
t0=$(date +%s)

# --- what the bench needs ------------------------------------------------------
# The pages' packages are installed here rather than by install-deps.sh:
# only this bench reads them, and python3.11-doc and valgrind alone are
# tens of MB.  A page's file decides, not its package: NodeSource's nodejs
# ships the same docs as Debian's nodejs-doc, which would conflict with it.
need=()
while IFS=$'\t' read -r name pkg path _; do
	[[ -z $name || $name == \#* ]] && continue
	[[ -f $path ]] || need+=("$pkg")
done <"$dir/pages.tsv"
[[ -x $chromium ]] || need+=(chromium)
command -v npm >/dev/null || need+=(nodejs npm)
if ((${#need[@]})); then
	mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
	[[ $(id -u) == 0 ]] || { echo "browser-pages: install ${need[*]} (as root) first" >&2; exit 1; }
	echo "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
# @playwright/mcp and the MCP SDK, exactly as package-lock.json pins them.
if [[ ! -d $dir/node_modules ]] || [[ $dir/package-lock.json -nt $dir/node_modules ]]; then
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	touch "$dir/node_modules"
fi
ours_bin=${BROWSER_PAGES_MCP_BROWSER:-build/bin/mcp-browser}
[[ -n ${BROWSER_PAGES_MCP_BROWSER:-} ]] || make -s -j2 build/bin/mcp-browser

# --- the two servers -----------------------------------------------------------
tmp=$(mktemp -d /tmp/cloche-browser-pages.XXXXXX)
pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	# A browser whose server died without closing it: every profile of
	# this run is under $tmp (playwright-mcp's too, through TMPDIR), so
	# its processes are known by that path and by nothing else.
	for p in $(pgrep -f -- "$tmp/" || true); do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Both browsers get the same window: playwright-mcp's default viewport.
read -r ours_port pw_port < <(free_ports 2)
"$ours_bin" --port "$ours_port" --listen 127.0.0.1 --log-level warn \
	--ready-socket "$tmp/ours.ready" --window-probe= -- \
	"$chromium" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
	--no-first-run --no-default-browser-check --disable-background-networking \
	--disable-component-update --disable-sync --disable-breakpad \
	--disable-features=Translate,MediaRouter --password-store=basic \
	--user-data-dir="$tmp/ours-profile" --window-size=1280,720 about:blank \
	>"$tmp/ours.log" 2>&1 &
pids+=($!)
mkdir -p "$tmp/pw"
(cd "$tmp/pw" && TMPDIR=$tmp exec node "$root/$dir/node_modules/@playwright/mcp/cli.js" \
	--port "$pw_port" --host 127.0.0.1 --headless --executable-path "$chromium" --isolated \
	--allowed-hosts "127.0.0.1:$pw_port" --no-sandbox --allow-unrestricted-file-access \
	--viewport-size 1280x720 --output-dir "$tmp/pw") \
	>"$tmp/pw.log" 2>&1 &
pids+=($!)

# serving PORT LOG: waits until the port answers HTTP (any status).
# shellcheck disable=SC2317  # answers is called by bench_wait
answers() { [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/mcp") != 000 ]]; }
serving() {
	bench_wait 60 "server on port $1" answers "$1" && return 0
	echo "its log:" >&2
	tail -n 20 "$2" >&2
	return 1
}
serving "$ours_port" "$tmp/ours.log"
serving "$pw_port" "$tmp/pw.log"

# The files come from the page cache in both browsers, the first included.
while IFS=$'\t' read -r name _ path _; do
	[[ -z $name || $name == \#* ]] || cat "$path" >/dev/null
done <"$dir/pages.tsv"

# --- the run ---------------------------------------------------------------------
rc=0
# In the background and waited for: a TERM then runs the cleanup at once
# instead of after the whole run.
node "$dir/run.mjs" --pages "$dir/pages.tsv" --snapshots "$snapshots" --out "$tmp/raw.json" \
	--ours "http://127.0.0.1:$ours_port/mcp" --theirs "http://127.0.0.1:$pw_port/mcp" \
	${BROWSER_PAGES_ONLY:+--only "$BROWSER_PAGES_ONLY"} ${BROWSER_PAGES_DUMP:+--dump "$BROWSER_PAGES_DUMP"} &
pids+=($!)
wait "$!" || rc=$?
[[ -s $tmp/raw.json ]] || { echo "browser-pages: the driver wrote no figures; mcp-browser's log:" >&2; grep -v "ERROR:dbus/" "$tmp/ours.log" | tail -n 20 >&2; exit 1; }
jq --arg at "$(date -u +%FT%TZ)" --argjson quick "$([[ ${CLOCHE_BENCH_QUICK:-0} == 1 ]] && echo true || echo false)" \
	--arg load_start "$load_start" --arg load_end "$(cut -d ' ' -f 1-3 /proc/loadavg)" \
	--argjson seconds "$(($(date +%s) - t0))" --arg commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	--arg chromium "$(dpkg-query -W -f='${Version}' chromium 2>/dev/null || echo unknown)" \
	--arg pw "$(jq -r .version "$dir/node_modules/@playwright/mcp/package.json")" \
	--arg sdk "$(jq -r .version "$dir/node_modules/@modelcontextprotocol/sdk/package.json")" \
	'{measured_at: $at, quick: $quick, bench_seconds: $seconds,
	  load_average: {start: $load_start, end: $load_end},
	  versions: {cloche_commit: $commit, chromium: $chromium, playwright_mcp: $pw, mcp_sdk: $sdk}} + .' \
	"$tmp/raw.json" >"$out"
echo "written: $out ($(($(date +%s) - t0)) s, load average at start $load_start)"
exit "$rc"
