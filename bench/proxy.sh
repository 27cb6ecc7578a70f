#!/usr/bin/env bash
# Benchmark: cloche-proxy against nginx (Debian's package) as equivalent
# reverse proxies, in the same run, to the same fast upstream: an nginx
# serving files from memory on loopback, outside gVisor, so that the
# proxies are what is measured.  Both proxies get one worker and keep
# connections to the upstream alive; cloche-proxy reaches it through a
# static route (--static-routes) and checks a sandbox token on every
# request, which nginx does not.  wrk drives both, in turns (A B A B ...),
# PROXY_BENCH_ROUNDS (3) rounds of PROXY_BENCH_SECONDS (8 s) each; the
# figure of each is its median round:
#   small: requests/s and p50/p99 latency for a 100-byte response
#          (PROXY_BENCH_CONNS, 64 connections)
#   large: MB/s for a 10 MiB response (8 connections)
# and, when the all-in-one runs (make run), one figure through a real
# sandbox: small requests to its health port (8080) through its cloche-proxy
# (the node agent's socket, gVisor's netstack and cloche-init's server all
# count in it, so it is not comparable with the loopback figures).
# Prints a table and writes bench/results/proxy.json.
#   CLOCHE_BUILD (build)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

rounds=${PROXY_BENCH_ROUNDS:-3}
secs=${PROXY_BENCH_SECONDS:-8}
conns=${PROXY_BENCH_CONNS:-64}
build=${CLOCHE_BUILD:-build}
out=bench/results/proxy.json

command -v nginx >/dev/null || die "nginx is missing (scripts/install-deps.sh installs it)"
command -v wrk >/dev/null || die "wrk is missing (scripts/install-deps.sh installs it)"
[[ -x $build/bin/cloche-proxy ]] || die "build first: make all"

work=$(mktemp -d /tmp/cloche-bench-proxy.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

up_port=$(free_port) ngx_port=$(free_port) px_port=$(free_port) px_admin=$(free_port)
mkdir -p "$work/www" "$work/up" "$work/ngx"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/small"
head -c $((10 << 20)) /dev/urandom >"$work/www/large"
head -c 48 /dev/urandom | base64 | tr -d '\n' >"$work/key"

# nginx wants its own prefix for temp paths; both instances run as root
# in the foreground with logs off.
nginx_conf() { # NAME BODY
	cat >"$work/$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/$1/nginx.pid;
error_log $work/$1/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $work/$1/body;
	proxy_temp_path $work/$1/proxy;
	fastcgi_temp_path $work/$1/fcgi;
	uwsgi_temp_path $work/$1/uwsgi;
	scgi_temp_path $work/$1/scgi;
	keepalive_requests 1000000;
	$2
}
CONF
}
nginx_conf up "
	sendfile on;
	open_file_cache max=16;
	server { listen 127.0.0.1:$up_port; root $work/www; }"
nginx_conf ngx "
	upstream sandbox { server 127.0.0.1:$up_port; keepalive 256; }
	server {
		listen 127.0.0.1:$ngx_port;
		location / {
			proxy_pass http://sandbox;
			proxy_http_version 1.1;
			proxy_set_header Connection \"\";
			proxy_set_header Host \$host;
			proxy_set_header X-Forwarded-For \$remote_addr;
			proxy_set_header X-Forwarded-Proto \$scheme;
			proxy_max_temp_file_size 0;
		}
	}"
nginx -p "$work/up" -c "$work/up/nginx.conf" & pids+=($!)
nginx -p "$work/ngx" -c "$work/ngx/nginx.conf" & pids+=($!)
"$build/bin/cloche-proxy" --listen 127.0.0.1 --port "$px_port" --admin-port "$px_admin" \
	--workers 1 --token-key-file "$work/key" --static-routes "bench=127.0.0.1:$up_port" \
	--log-level warn 2>"$work/proxy.log" & pids+=($!)
px_pid=$!
token=$("$build/bin/cloche-proxy" --token-key-file "$work/key" token bench)
host=80-bench.cloche.localhost
for port in $up_port $ngx_port $px_port; do
	for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && break; sleep 0.1; done
done
for port in $ngx_port $px_port; do
	got=$(curl -s -H "Host: $host" -H "Authorization: Bearer $token" "http://127.0.0.1:$port/small")
	[[ $got == "$(cat "$work/www/small")" ]] || die "the proxy on port $port does not serve the file"
done

# wrk's summary: requests/s, transfer/s (MB), p50 and p99 (ms).
run_wrk() { # PORT PATH CONNS
	wrk -t1 -c"$3" -d"${secs}s" --latency -H "Host: $host" -H "Authorization: Bearer $token" \
		"http://127.0.0.1:$1$2" 2>&1 | awk '
		function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		function mb(v) { if (v ~ /GB$/) return v * 1024; if (v ~ /MB$/) return v + 0; if (v ~ /KB$/) return v / 1024; return v / 1048576 }
		/Requests\/sec/ { rps = $2 } /Transfer\/sec/ { tps = mb($2) }
		/^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
		/Non-2xx|Socket errors/ { err = err $0 " " }
		END { printf "%s %s %s %s %s\n", rps, tps, p50, p99, (err == "" ? "-" : "errors") }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A R
for r in $(seq "$rounds"); do
	for who in nginx cloche; do
		port=$ngx_port; [[ $who == cloche ]] && port=$px_port
		read -r rps _ p50 p99 err < <(run_wrk "$port" /small "$conns")
		[[ $err == - ]] || echo "warning: $who round $r small: wrk saw errors" >&2
		R[$who.small.rps]+="$rps "; R[$who.small.p50]+="$p50 "; R[$who.small.p99]+="$p99 "
		read -r _ mbps _ _ err < <(run_wrk "$port" /large 8)
		[[ $err == - ]] || echo "warning: $who round $r large: wrk saw errors" >&2
		R[$who.large.mbps]+="$mbps "
	done
done
med() { tr ' ' '\n' <<<"${R[$1]}" | grep . | median; }
rss_kb=$(awk '/VmHWM/ { print $2 }' "/proc/$px_pid/status")

printf '%-28s %14s %14s %8s\n' "proxy: one worker, loopback" nginx cloche-proxy ratio
for k in small.rps small.p50 small.p99 large.mbps; do
	a=$(med "nginx.$k") b=$(med "cloche.$k")
	printf '%-28s %14s %14s %8s\n' "$k" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2f", b / a }')"
done
echo "cloche-proxy peak RSS: ${rss_kb} KiB"

# Through a real sandbox, when the all-in-one is up.
sb_rps=null sb_p50=null sb_p99=null
if [[ -f scripts/lib/aio.sh ]]; then
	. scripts/lib/aio.sh
	sb_id=$(cat "$AIO_RUN/sandbox" 2>/dev/null || true)
	if [[ -n $sb_id ]] && aio_alive proxy; then
		sb_tok=$(aio_api GET "/sbv1/sandboxes/$sb_id" 2>/dev/null | jq -r '.token // empty')
		if [[ -n $sb_tok ]]; then
			read -r sb_rps _ sb_p50 sb_p99 err < <(wrk -t1 -c16 -d"${secs}s" --latency \
				-H "Host: 8080-$sb_id.$AIO_DOMAIN" -H "Authorization: Bearer $sb_tok" \
				"http://127.0.0.1:$AIO_PROXY_PORT/health" 2>&1 | awk '
				function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
				/Requests\/sec/ { rps = $2 } /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
				/Non-2xx|Socket errors/ { err = "errors" }
				END { printf "%s 0 %s %s %s\n", rps, p50, p99, (err == "" ? "-" : err) }')
			[[ $err == - ]] || echo "warning: the sandbox run saw errors" >&2
			echo "through sandbox $sb_id (health port, 16 connections): ${sb_rps} req/s, p50 ${sb_p50} ms, p99 ${sb_p99} ms"
		fi
	fi
fi

jq -n --argjson sb_rps "${sb_rps:-null}" --argjson sb_p50 "${sb_p50:-null}" --argjson sb_p99 "${sb_p99:-null}" --arg when "$(date -u +%FT%TZ)" --argjson rounds "$rounds" --argjson secs "$secs" \
	--argjson conns "$conns" --arg nproc "$(nproc)" \
	--argjson n_rps "$(med nginx.small.rps)" --argjson c_rps "$(med cloche.small.rps)" \
	--argjson n_p50 "$(med nginx.small.p50)" --argjson c_p50 "$(med cloche.small.p50)" \
	--argjson n_p99 "$(med nginx.small.p99)" --argjson c_p99 "$(med cloche.small.p99)" \
	--argjson n_mb "$(med nginx.large.mbps)" --argjson c_mb "$(med cloche.large.mbps)" \
	--argjson rss "${rss_kb:-0}" '{
	when: $when, machine_cpus: ($nproc | tonumber), rounds: $rounds, seconds: $secs,
	small: {connections: $conns, bytes: 100,
		nginx: {rps: $n_rps, p50_ms: $n_p50, p99_ms: $n_p99},
		cloche: {rps: $c_rps, p50_ms: $c_p50, p99_ms: $c_p99},
		rps_ratio: (($c_rps / $n_rps) * 100 | round / 100)},
	large: {connections: 8, bytes: 10485760, nginx_mbps: $n_mb, cloche_mbps: $c_mb,
		ratio: (($c_mb / $n_mb) * 100 | round / 100)},
	cloche_peak_rss_kib: $rss,
	through_sandbox: {what: "GET /health of a desktop sandbox through the all-in-one proxy, 16 connections",
		rps: $sb_rps, p50_ms: $sb_p50, p99_ms: $sb_p99}}' >"$out"
echo "wrote $out"
