# shellcheck shell=bash
# s3rver, the S3 API server the tests and benchmarks talk to (an npm package
# of tests/e2e), on loopback (needs tests/lib/tap.sh).
#
#   S3RVER                              its executable
#   s3rver_start DIR PORT BUCKET LOG    starts it with its data in DIR and
#                                       BUCKET made, its output appended to
#                                       LOG; sets S3RVER_PID; waits until it
#                                       answers HTTP (10 s), fails if it does not
S3RVER=tests/e2e/node_modules/.bin/s3rver

s3rver_start() {
	# s3rver makes continuation tokens with DES, which OpenSSL 3 keeps in its
	# legacy provider: without it every truncated list page is a 500.
	NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$1" -a 127.0.0.1 -p "$2" \
		--configure-bucket "$3" >>"$4" 2>&1 &
	# shellcheck disable=SC2034  # the caller's
	S3RVER_PID=$!
	wait_for 10 curl -s -o /dev/null -m 2 "http://127.0.0.1:$2/"
}
