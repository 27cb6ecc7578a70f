#!/usr/bin/env bash
# `cloche-node s3` (node-agent/na_s3.c) against s3rver (npm, tests/e2e), with
# awscli as the client nobody here wrote: round trips of a small file and of
# a 40 MiB one in 5 MiB parts (sha256 equal, the server stored 9 parts), head,
# keys with blanks, '$', '&', quotes and UTF-8, ls by prefix and across pages
# (CLOCHE_S3_LIST_PAGE), rm and rm-prefix, a missing key, a wrong access key,
# usage errors, an endpoint that refuses and one that never answers (both
# give up in bounded time), and the secret key never on stderr, debug logging
# included.  awscli sees what we put, and we read what awscli puts.
#   AWS: the awscli to use (default Debian's /usr/bin/aws)
# sanitize: yes
# lane: host
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/s3.sh

BUILD=${BUILD:-build}
NODE=$BUILD/bin/cloche-node
AWS=${AWS:-/usr/bin/aws}
[[ -x $AWS ]] || AWS=aws
[[ -x $NODE ]] || { not_ok "$NODE is built"; tap_exit; }
[[ -x $S3RVER ]] || { not_ok "s3rver is installed (scripts/install-deps.sh)"; tap_exit; }

work=$(mktemp -d)
pids=()
cleanup() {
	((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

port=$(free_port)
check "s3rver serves on 127.0.0.1:$port" s3rver_start "$work/data" "$port" ckpt "$work/s3rver.log"
pids+=("$S3RVER_PID")

# Our client signs with its own secret (s3rver checks only the access key
# of a SigV4 request), so that secret can be looked for on stderr.
SECRET="never-shown-$RANDOM$RANDOM-secret"
export CLOCHE_S3_ENDPOINT=http://127.0.0.1:$port CLOCHE_S3_BUCKET=ckpt
export CLOCHE_S3_ACCESS_KEY=S3RVER CLOCHE_S3_SECRET_KEY=$SECRET
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
export AWS_PAGER='' AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
unset CLOCHE_S3_REGION CLOCHE_S3_PART_SIZE CLOCHE_S3_ATTEMPTS CLOCHE_S3_BACKOFF_MS \
	CLOCHE_S3_STALL_SECONDS CLOCHE_S3_LIST_PAGE

# s3 ARGS...: runs `cloche-node s3`, stdout in $work/out, stderr in
# $work/err (and kept in $work/err.all); returns its exit status.
s3() {
	local rc
	"$NODE" s3 "$@" >"$work/out" 2>"$work/err"
	rc=$?
	cat "$work/err" >>"$work/err.all"
	return $rc
}
aws3() { "$AWS" --endpoint-url "http://127.0.0.1:$port" s3api "$@"; }
sha() { sha256sum <"$1" | cut -d' ' -f1; }
quiet() { [[ ! -s $work/err ]] || { sed 's/^/# stderr: /' "$work/err" | head -n 5; return 1; }; }

# ---- a small file both ways
printf '{"sandbox":"sb-1","files":["rootfs","checkpoint.img"]}\n' >"$work/small"
small_ok() {
	s3 put sb-1/manifest.json "$work/small" && quiet || return 1
	s3 head sb-1/manifest.json && [[ $(cat "$work/out") == "$(stat -c %s "$work/small")" ]] || return 1
	head -c 100 /dev/urandom >"$work/small.back" # get truncates what was there
	s3 get sb-1/manifest.json "$work/small.back" && quiet &&
		cmp -s "$work/small" "$work/small.back"
}
check "put, head and get of a small object round-trip" small_ok
aws_sees_small() {
	[[ $(aws3 head-object --bucket ckpt --key sb-1/manifest.json --query ContentLength \
		--output text) == "$(stat -c %s "$work/small")" ]] &&
		aws3 get-object --bucket ckpt --key sb-1/manifest.json "$work/small.aws" >/dev/null &&
		cmp -s "$work/small" "$work/small.aws"
}
check "awscli sees the small object: its size and its bytes" aws_sees_small
head -c 300000 /dev/urandom >"$work/from-aws"
we_read_aws() {
	aws3 put-object --bucket ckpt --key from-aws/blob --body "$work/from-aws" >/dev/null &&
		s3 get from-aws/blob "$work/from-aws.back" && cmp -s "$work/from-aws" "$work/from-aws.back"
}
check "what awscli puts our get reads back" we_read_aws

# ---- 40 MiB (plus an odd tail) in 5 MiB parts
head -c $((40 << 20)) /dev/urandom >"$work/big"
head -c 12345 /dev/urandom >>"$work/big"
big_sha=$(sha "$work/big")
parts_before=$(grep -c 'Stored part' "$work/s3rver.log")
big_put() {
	CLOCHE_S3_PART_SIZE=5M CLOCHE_NODE_LOG_LEVEL=debug s3 put ckpt/sb-1/state.img "$work/big" &&
		grep -q '"msg":"s3 multipart upload done".*"parts":9' "$work/err"
}
check "a 40 MiB file goes up as a multipart upload of 9 parts" big_put
check "... and s3rver stored 9 parts" \
	test $(($(grep -c 'Stored part' "$work/s3rver.log") - parts_before)) -eq 9
big_get() {
	s3 get ckpt/sb-1/state.img "$work/big.back" && quiet && [[ $(sha "$work/big.back") == "$big_sha" ]]
}
check "... and comes back with the same sha256" big_get
aws_big() {
	[[ $(aws3 head-object --bucket ckpt --key ckpt/sb-1/state.img --query ContentLength \
		--output text) == "$(stat -c %s "$work/big")" ]] &&
		aws3 get-object --bucket ckpt --key ckpt/sb-1/state.img "$work/big.aws" >/dev/null &&
		[[ $(sha "$work/big.aws") == "$big_sha" ]]
}
check "... and awscli reads the same size and sha256" aws_big
s3 head ckpt/sb-1/state.img
check "head gives its size" test "$(cat "$work/out")" == "$(stat -c %s "$work/big")"

# ---- keys that need encoding (path) and escaping (XML listing)
odd=(
	'odd/with space and $dollar.txt'
	$'odd/amp&lt<gt>quote\'"dq"+plus=eq.txt'
	'odd/ü-é-日本~tilde'
	'odd/percent%20not-a-space?#'
)
odd_put() {
	local k i=0
	for k in "${odd[@]}"; do
		printf 'object %d\n' "$i" >"$work/odd"
		s3 put "$k" "$work/odd" || return 1
		s3 get "$k" "$work/odd.back" && cmp -s "$work/odd" "$work/odd.back" || return 1
		i=$((i + 1))
	done
}
check "keys with blanks, \$, &, <>, quotes, '+', '%' and UTF-8 round-trip" odd_put
odd_listed() {
	local want
	want=$(printf '%s\n' "${odd[@]}" | LC_ALL=C sort)
	s3 ls odd/ && [[ $(cut -f2- "$work/out") == "$want" ]] &&
		[[ $(cut -f1 "$work/out" | sort -u) == 9 ]] &&
		[[ $(aws3 list-objects-v2 --bucket ckpt --prefix odd/ --query 'Contents[].Key' \
			--output json | jq -r '.[]') == "$want" ]]
}
check "ls odd/ lists exactly those keys, as awscli does" odd_listed

# ---- listing across pages
for i in 1 2 3 4 5 6 7; do printf '%s' "$i" >"$work/p$i"; s3 put "page/k$i" "$work/p$i"; done
paged() {
	CLOCHE_S3_LIST_PAGE=2 CLOCHE_NODE_LOG_LEVEL=debug s3 ls page/ &&
		[[ $(cut -f2 "$work/out" | tr '\n' ' ') == "page/k1 page/k2 page/k3 page/k4 page/k5 page/k6 page/k7 " ]] &&
		[[ $(grep -c '"object":"ckpt (list)"' "$work/err") == 4 ]]
}
check "ls across 4 pages of 2 keys (continuation tokens) lists all 7" paged
all_listed() {
	s3 ls && [[ $(wc -l <"$work/out") == $((3 + ${#odd[@]} + 7)) ]]
}
check "ls without a prefix lists the whole bucket" all_listed

# ---- rm, rm-prefix, missing keys
rm_ok() {
	s3 rm from-aws/blob && quiet && ! s3 head from-aws/blob &&
		! aws3 head-object --bucket ckpt --key from-aws/blob >/dev/null 2>&1
}
check "rm deletes (our head and awscli's agree)" rm_ok
check "rm of a missing key succeeds" s3 rm from-aws/blob
missing_get() {
	local rc
	s3 get no/such/key "$work/missing"
	rc=$?
	[[ $rc == 1 && $(wc -l <"$work/err") == 1 ]] &&
		grep -q '^cloche-node s3 get: s3 GET ckpt/no/such/key: 404 NoSuchKey$' "$work/err"
}
check "get of a missing key exits 1 with one clear line" missing_get
missing_head() {
	s3 head no/such/key
	[[ $? == 1 ]] && grep -q '404' "$work/err"
}
check "head of a missing key exits 1 and says 404" missing_head
rm_prefix() {
	local left
	s3 rm-prefix page/ && [[ $(cat "$work/out") == 7 ]] && s3 ls page/ && [[ ! -s $work/out ]] &&
		left=$(aws3 list-objects-v2 --bucket ckpt --prefix page/ --output json) || return 1
	# awscli prints nothing at all for an empty listing
	[[ -z $left || $(jq '(.Contents // []) | length' <<<"$left") == 0 ]]
}
check "rm-prefix page/ deletes the 7 keys and says so" rm_prefix
check "rm-prefix refuses an empty prefix" bash -c '! "$0" s3 rm-prefix "" 2>/dev/null' "$NODE"

# ---- usage and configuration
usage() {
	local rc
	s3
	rc=$?
	[[ $rc == 2 ]] && grep -q '^usage: cloche-node s3' "$work/err" || return 1
	s3 frob x
	[[ $? == 2 ]] || return 1
	s3 put only-a-key
	[[ $? == 2 ]] || return 1
	CLOCHE_S3_ENDPOINT='' s3 ls
	[[ $? == 2 ]] && grep -q 'CLOCHE_S3_ENDPOINT' "$work/err" || return 1
	CLOCHE_S3_PART_SIZE=1M s3 ls
	[[ $? == 2 ]] && grep -q '5 MiB' "$work/err"
}
check "usage errors and bad configuration exit 2 and say why" usage
aws_fallback() {
	env -u CLOCHE_S3_ACCESS_KEY -u CLOCHE_S3_SECRET_KEY "$NODE" s3 head sb-1/manifest.json \
		>/dev/null 2>>"$work/err.all"
}
check "the keys fall back to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY" aws_fallback
wrong_key() {
	CLOCHE_S3_ACCESS_KEY=NOBODY s3 put x "$work/small"
	[[ $? == 1 ]] && grep -q '403 InvalidAccessKeyId' "$work/err"
}
check "a key the server does not know: exit 1, 403 InvalidAccessKeyId" wrong_key

# ---- dead endpoints give up in bounded time
refused() {
	local t0 rc
	t0=$(now_ms)
	CLOCHE_S3_ENDPOINT=http://127.0.0.1:$(free_port) CLOCHE_S3_ATTEMPTS=2 CLOCHE_S3_BACKOFF_MS=100 \
		s3 get x "$work/x"
	rc=$?
	echo "# refused after $(($(now_ms) - t0)) ms: $(tail -n 1 "$work/err")"
	[[ $rc == 1 ]] && (($(now_ms) - t0 < 10000)) &&
		grep -q "Couldn't connect to server (after 2 attempts)" "$work/err"
}
check "an endpoint that refuses: exit 1 after 2 attempts, and says so" refused
# A listener that never accepts: connections complete in its backlog and
# requests are never answered.
sport=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); time.sleep(120)' "$sport" &
pids+=($!)
stalled() {
	local t0 rc
	for _ in $(seq 50); do ss -Htln "sport = :$sport" | grep -q . && break; sleep 0.1; done
	t0=$(now_ms)
	CLOCHE_S3_ENDPOINT=http://127.0.0.1:$sport CLOCHE_S3_ATTEMPTS=2 CLOCHE_S3_BACKOFF_MS=100 \
		CLOCHE_S3_STALL_SECONDS=2 CLOCHE_NODE_LOG_LEVEL=debug s3 head x
	rc=$?
	echo "# stalled gave up after $(($(now_ms) - t0)) ms: $(tail -n 1 "$work/err")"
	[[ $rc == 1 ]] && (($(now_ms) - t0 < 15000)) &&
		grep -q 'Operation too slow.*(after 2 attempts)' "$work/err"
}
check "a server that never answers: given up after 2 stalls of 2 s" stalled

# ---- secrets
no_secret() {
	[[ -s $work/err.all ]] && ! grep -qF "$SECRET" "$work/err.all" &&
		! grep -qiE 'AWS4-HMAC-SHA256|Signature=|authorization' "$work/err.all"
}
check "no stderr (debug logs and failures included) holds the secret or a signature" no_secret
debug_logged() { grep -q '"level":"debug".*"msg":"s3 request"' "$work/err.all"; }
check "... though debug logging was on and wrote requests" debug_logged

tap_exit
