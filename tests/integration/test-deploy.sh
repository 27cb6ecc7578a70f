#!/usr/bin/env bash
# deploy/: what can be checked without a cluster or systemd as PID 1.
#   - the systemd units pass `systemd-analyze verify` (a broken one does not);
#   - the Kubernetes manifests validate against the Kubernetes API schemas
#     (tests/e2e/k8s-validate.mjs, kubernetes-models), and a broken
#     manifest is caught;
#   - every config file (deploy/etc and the ConfigMaps) is read by its
#     daemon without complaint (it gets as far as reading its secrets);
#   - deploy/install.sh into a scratch root, for each role: binaries, units,
#     configs with the given values, secrets 0600; a second run keeps what
#     is there; bad arguments are refused with exit status 2 and a message.
# Needs no pool: the daemons are stopped before they touch one.
# lane: host
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/s3.sh
BUILD=${BUILD:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- systemd units ---------------------------------------------------------------
mkdir -p "$work/units"
for u in deploy/systemd/*.service; do
	sed -e "s|/usr/local/bin/|$PWD/$BUILD/bin/|" -e "s|/usr/local/lib/cloche/|$PWD/deploy/|" "$u" >"$work/units/$(basename "$u")"
done
cp deploy/systemd/*.timer "$work/units/"
out=$(systemd-analyze verify "$work"/units/*.service "$work"/units/*.timer 2>&1)
check "systemd-analyze verify passes the units ($(ls deploy/systemd | tr '\n' ' '))" test -z "$out"
[[ -z $out ]] || sed 's/^/# /' <<<"$out"
sed 's/^ProtectSystem=strict/ProtectSystm=strict/' "$work/units/cloche-portal.service" >"$work/units/broken.service"
check "... and flags a misspelt option" bash -c 'systemd-analyze verify "$1" 2>&1 | grep -q ProtectSystm' _ "$work/units/broken.service"
rm -f "$work/units/broken.service"
check "the node agent keeps its sandboxes across a restart (KillMode=process), the others drop privileges" \
	bash -c 'grep -q "^KillMode=process" deploy/systemd/cloche-node.service &&
		grep -q "^User=cloche-portal" deploy/systemd/cloche-portal.service && grep -q "^User=cloche-proxy" deploy/systemd/cloche-proxy.service &&
		grep -q "^CapabilityBoundingSet=$" deploy/systemd/cloche-portal.service'

# --- Kubernetes ------------------------------------------------------------------
(cd tests/e2e && node k8s-validate.mjs ../../deploy/k8s/*.yaml)
check "the Kubernetes manifests validate" test $? = 0
sed -e 's/containerPort: 7000/containerPort: "seven thousand"/' deploy/k8s/portal.yaml >"$work/broken.yaml"
check "... and a manifest with a port that is not a number does not" \
	bash -c '! (cd tests/e2e && node k8s-validate.mjs "$1" >/dev/null)' _ "$work/broken.yaml"
sed -e '/^  selector:$/,/^  template:$/{/^  template:$/!d}' deploy/k8s/node.yaml >"$work/broken2.yaml"
check "... nor a DaemonSet without its selector" \
	bash -c '! (cd tests/e2e && node k8s-validate.mjs "$1" >/dev/null)' _ "$work/broken2.yaml"

# --- S3 lifecycle rules ---------------------------------------------------------------
# awscli checks the rules against the S3 API's model before it sends them;
# s3rver, the S3 server here, then answers NotImplemented (it has no
# lifecycle), so what this shows is that the rules are well formed and
# sent, not that a server applied them.
AWS=${AWS:-/usr/bin/aws}
s3port=$(free_port)
s3rver_start "$work/s3rver-data" "$s3port" cloche "$work/s3rver.log"
trap 'kill "$S3RVER_PID" 2>/dev/null; wait "$S3RVER_PID" 2>/dev/null; rm -rf "$work"' EXIT
# lifecycle FILE: awscli's exit status (254: the server refused; 252: awscli did) and its words.
lifecycle() {
	AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1 "$AWS" \
		--endpoint-url "http://127.0.0.1:$s3port" s3api put-bucket-lifecycle-configuration --bucket cloche \
		--lifecycle-configuration "file://$1" >"$work/lc.out" 2>&1
	echo "$? $(tr '\n' ' ' <"$work/lc.out")"
}
out=$(lifecycle deploy/s3/lifecycle.json)
check "awscli sends deploy/s3/lifecycle.json (awscli exit ${out:0:3}, s3rver: $(grep -o NotImplemented <<<"$out"))" \
	bash -c '[[ $1 == "254 "*NotImplemented* ]]' _ "$out"
jq '.Rules[0].Expiration.Days = "fourteen"' deploy/s3/lifecycle.json >"$work/lc-bad.json"
out=$(lifecycle "$work/lc-bad.json")
check "... and refuses a rule whose days are not a number, before sending it" \
	bash -c '[[ $1 == "252 "*"Parameter validation failed"* ]]' _ "$out"
check "... whose prefixes are the checkpoints' under the nodes' s3-prefix, never templates/" \
	bash -c '[[ $(jq -r ".Rules[] | select(.Expiration) | .Filter.Prefix" deploy/s3/lifecycle.json) == */sandboxes/ ]] &&
		! grep -q templates/ deploy/s3/lifecycle.json'

# --- config files ------------------------------------------------------------------
# conf_reads DAEMON FILE: the daemon reads the whole file and stops at its
# (missing) secret, not at the file.
conf_reads() {
	local p out
	p=$(tr a-z A-Z <<<"$1")
	out=$(env "CLOCHE_${p}_NODE_CREDENTIAL_FILE=/nonexistent" "CLOCHE_${p}_CREDENTIAL_FILE=/nonexistent" \
		"$BUILD/bin/cloche-$1" --config "$2" 2>&1)
	grep -q '/nonexistent' <<<"${out##*$'\n'}" || { sed 's/^/# /' <<<"$out" | tail -n 3; return 1; }
}
export -f conf_reads
export BUILD
for d in portal node proxy; do
	check "cloche-$d reads deploy/etc/$d.conf" conf_reads "$d" "deploy/etc/$d.conf"
done
for f in portal:portal.yaml:portal.conf node:node.yaml:node.conf proxy:node.yaml:proxy.conf; do
	IFS=: read -r d y k <<<"$f"
	(cd tests/e2e && node -e "
		import('yaml').then(({parseAllDocuments}) => {
			for (const d of parseAllDocuments(require('fs').readFileSync('../../deploy/k8s/$y', 'utf8')))
				{ const o = d.toJS(); if (o && o.kind === 'ConfigMap' && o.data['$k']) process.stdout.write(o.data['$k']); }
		})") >"$work/$k"
	check "cloche-$d reads the $k of the Kubernetes ConfigMap" conf_reads "$d" "$work/$k"
done
printf 'no-such-option = 1\n' >"$work/bad.conf"
check "... and a config file with an unknown option is refused, naming the line" \
	bash -c '"$1" --config "$2" 2>&1 | grep -q "bad.conf:1"' _ "$BUILD/bin/cloche-portal" "$work/bad.conf"

# --- deploy/install.sh --------------------------------------------------------------
inst() { bash deploy/install.sh "$@" --no-build >"$work/inst.out" 2>&1; }
printf 'c2VjcmV0\n' >"$work/cred"
printf 'a2V5\n' >"$work/key"
check "install.sh portal into a scratch root" inst portal --root "$work/p" --domain sb.example.org --allowed-hosts portal.example.org
check "... installs the portal, the CLI, the unit and the docs" \
	test -x "$work/p/usr/local/bin/cloche-portal" -a -x "$work/p/usr/local/bin/cloche" \
	-a -f "$work/p/etc/systemd/system/cloche-portal.service" -a -f "$work/p/usr/local/share/doc/cloche/operations.md" \
	-a ! -e "$work/p/usr/local/bin/cloche-node"
check "... a config with the given domain and names, which the portal reads" \
	bash -c 'grep -q "^proxy-url = http://{port}-{id}.sb.example.org$" "$1" && grep -q "^allowed-hosts = portal.example.org$" "$1"' _ "$work/p/etc/cloche/portal.conf"
conf_reads portal "$work/p/etc/cloche/portal.conf" || not_ok "the portal reads the written config"
check "... and makes the shared secrets, 0600" \
	bash -c '[[ $(stat -c %a "$1/node.cred") == 600 && $(stat -c %a "$1/token.key") == 600 && $(stat -c %s "$1/node.cred") -ge 60 ]]' _ "$work/p/etc/cloche/credentials"
sum1=$(cat "$work/p/etc/cloche/credentials/node.cred")
echo '# an operator edit' >>"$work/p/etc/cloche/portal.conf"
check "a second run keeps the config and the secrets" \
	bash -c 'bash deploy/install.sh portal --root "$1" --no-build >/dev/null 2>&1 && grep -q "an operator edit" "$1/etc/cloche/portal.conf" && [[ $(cat "$1/etc/cloche/credentials/node.cred") == "$2" ]]' _ "$work/p" "$sum1"
check "install.sh node with the portal's secrets" \
	inst node --root "$work/n" --portal-url http://10.0.0.10:7000 --advertise 10.0.0.12 --domain sb.example.org \
	--peers 10.0.0.11,10.0.0.12 --node-credential "$work/cred" --token-key "$work/key" --warm 3
check "... installs the agent, the proxy and both units, not the portal" \
	test -x "$work/n/usr/local/bin/cloche-node" -a -x "$work/n/usr/local/bin/cloche-proxy" \
	-a -f "$work/n/etc/systemd/system/cloche-node.service" -a -f "$work/n/etc/systemd/system/cloche-proxy.service" \
	-a ! -e "$work/n/usr/local/bin/cloche-portal"
check "... configs that name the portal, this node and its peers" \
	bash -c 'grep -q "^portal = http://10.0.0.10:7000$" "$1/node.conf" && grep -q "^advertise-url = http://10.0.0.12:7070$" "$1/node.conf" &&
		grep -q "^warm-pool = desktop=3$" "$1/node.conf" && grep -q "^advertise = 10.0.0.12:80$" "$1/proxy.conf" &&
		grep -q "^trusted-peers = 10.0.0.11,10.0.0.12$" "$1/proxy.conf" && grep -q "^domain = sb.example.org$" "$1/proxy.conf"' _ "$work/n/etc/cloche"
check "... which the agent and the proxy read" \
	bash -c 'conf_reads node "$1/node.conf" && conf_reads proxy "$1/proxy.conf"' _ "$work/n/etc/cloche"
check "... and the secrets it was given" cmp -s "$work/cred" "$work/n/etc/cloche/credentials/node.cred"
printf 'AK\nSK\n' >"$work/s3"
head -c 32 /dev/urandom | base64 >"$work/seal"
check "install.sh node with S3 writes the S3 options" \
	bash -c 'bash deploy/install.sh node --no-build --root "$1" --portal-url http://p:7000 --advertise 10.0.0.13 --node-credential "$2" --token-key "$3" --s3-endpoint http://s3:9000 --s3-bucket ckpt --s3-credential "$4" --s3-seal-key "$5" >/dev/null 2>&1 &&
		grep -q "^s3-endpoint = http://s3:9000$" "$1/etc/cloche/node.conf" && grep -q "^s3-credential-file = /etc/cloche/credentials/s3$" "$1/etc/cloche/node.conf" &&
		grep -q "^s3-seal-key-file = /etc/cloche/credentials/s3-seal$" "$1/etc/cloche/node.conf" && cmp -s "$5" "$1/etc/cloche/credentials/s3-seal"' \
	_ "$work/s" "$work/cred" "$work/key" "$work/s3" "$work/seal"
# refused ARGS...: exit status 2 and a message naming the problem ($MSG).
refused() { bash deploy/install.sh "$@" --no-build --root "$work/x" >"$work/r.out" 2>&1; [[ $? == 2 ]] && grep -q -- "$MSG" "$work/r.out"; }
MSG="the role is" check "an unknown role: exit 2 and a message" refused nodes
MSG="needs the portal's secrets" check "a node without the portal's secrets: refused" refused node --portal-url http://p:7000 --advertise 10.0.0.12
MSG="--portal-url must be" check "a portal URL that is not one: refused" refused node --portal-url portal --advertise 1.2.3.4 --node-credential "$work/cred" --token-key "$work/key"
MSG="--warm must be a number" check "--warm of the wrong kind: refused" refused all --warm many
MSG="unknown option" check "an unknown option: refused" refused all --colour blue
MSG="S3 needs" check "half an S3 configuration: refused" refused all --s3-endpoint http://s3:9000
check "... and a refused run wrote nothing" test ! -e "$work/x/etc"
tap_exit
