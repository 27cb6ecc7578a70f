#!/usr/bin/env bash
# Installs cloche on this machine as systemd services, from this checkout.
#
#   deploy/install.sh portal [OPTIONS]   the portal (one per installation)
#   deploy/install.sh node   [OPTIONS]   a node: node agent + proxy (any number)
#   deploy/install.sh all    [OPTIONS]   both on one machine
#
# A second node from a fresh Debian 12 machine, as root, is two commands:
#   git clone <this repository> cloche
#   cloche/deploy/install.sh node --portal-url http://10.0.0.10:7000 --advertise 10.0.0.12 \
#       --domain sandboxes.example.com --credentials-from root@10.0.0.10
#
# Options:
#   --portal-url URL        where nodes and proxies reach the portal (node, all)
#   --domain NAME           sandboxes are {port}-{id}.NAME (wildcard DNS to the proxies)
#   --advertise ADDR        this machine's address on the cluster network (node)
#   --peers LIST            the proxies (addresses) that may forward to this one
#   --allowed-hosts LIST    names clients use for the portal (portal)
#   --warm N                warm desktops kept ready on this node (default 2)
#   --max-sandboxes N       most sandboxes on this node (default 32)
#   --credentials-from HOST copy node.cred and token.key from HOST's
#                           /etc/cloche/credentials over ssh (node)
#   --node-credential FILE / --token-key FILE   the same, from files
#   --s3-endpoint URL --s3-bucket B [--s3-region R] [--s3-prefix P] --s3-credential FILE
#   --s3-seal-key FILE (the key that seals manifests: the same file on every node)
#                           L2 checkpoints in S3 (node; FILE: access key and secret, two lines)
#   --root DIR              install under DIR instead of / (users, builds and
#                           systemd are then left alone: for a look or a test)
#   --no-build              use build/ as it is (no apt-get, no make, no template)
#   --no-start              install and enable nothing (no systemctl)
# Idempotent: an existing config file or credential is kept (and said so);
# remove it to have it written again.  Exit status 2 for usage errors.
set -euo pipefail
cd "$(dirname "$0")/.."
me=deploy/install.sh
usage() { sed -n '2,/^# Idempotent/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "$me: $*" >&2; exit 2; }
say() { echo "$me: $*"; }

(($#)) || usage
role=$1
shift
case $role in portal | node | all) ;; -h | --help) usage ;; *) die "the role is portal, node or all, not \`$role\`" ;; esac
portal_url= domain= advertise= peers= allowed= warm=2 maxsb=32 from= cred_file= key_file=
s3_endpoint= s3_bucket= s3_region= s3_prefix= s3_cred= s3_seal= root= build=1 start=1
while (($#)); do
	opt=$1
	case $opt in
	--no-build) build=0; shift; continue ;;
	--no-start) start=0; shift; continue ;;
	-h | --help) usage ;;
	--*) (($# >= 2)) || die "$opt needs a value" ;;
	*) die "unknown argument \`$opt\`" ;;
	esac
	v=$2
	shift 2
	case $opt in
	--portal-url) portal_url=$v ;;
	--domain) domain=$v ;;
	--advertise) advertise=$v ;;
	--peers) peers=$v ;;
	--allowed-hosts) allowed=$v ;;
	--warm) warm=$v ;;
	--max-sandboxes) maxsb=$v ;;
	--credentials-from) from=$v ;;
	--node-credential) cred_file=$v ;;
	--token-key) key_file=$v ;;
	--s3-endpoint) s3_endpoint=$v ;;
	--s3-bucket) s3_bucket=$v ;;
	--s3-region) s3_region=$v ;;
	--s3-prefix) s3_prefix=$v ;;
	--s3-credential) s3_cred=$v ;;
	--s3-seal-key) s3_seal=$v ;;
	--root) root=$v ;;
	*) die "unknown option \`$opt\`" ;;
	esac
done

# --- check everything before touching anything ----------------------------------
node=0 portal=0
[[ $role == portal ]] || node=1
[[ $role == node ]] || portal=1
[[ $warm =~ ^[0-9]+$ ]] || die "--warm must be a number, not \`$warm\`"
[[ $maxsb =~ ^[0-9]+$ ]] || die "--max-sandboxes must be a number, not \`$maxsb\`"
[[ -z $domain || $domain =~ ^[A-Za-z0-9.-]+$ ]] || die "--domain \`$domain\` is not a DNS name"
if ((node)); then
	if [[ $role == all ]]; then
		portal_url=${portal_url:-http://127.0.0.1:7000}
		advertise=${advertise:-127.0.0.1}
	fi
	[[ $portal_url =~ ^https?://[^/]+$ ]] || die "--portal-url must be http(s)://host[:port] (got \`$portal_url\`)"
	[[ -n $advertise ]] || die "--advertise: this machine's address the others reach it at"
	[[ $advertise =~ ^[A-Za-z0-9.:-]+$ ]] || die "--advertise \`$advertise\` is not an address"
	if [[ $role == node ]]; then
		[[ -n $from || (-n $cred_file && -n $key_file) ]] ||
			die "a node needs the portal's secrets: --credentials-from HOST, or --node-credential FILE --token-key FILE"
	fi
	if [[ -n $s3_endpoint$s3_bucket$s3_cred$s3_seal ]]; then
		[[ -n $s3_endpoint && -n $s3_bucket && -n $s3_cred && -n $s3_seal ]] ||
			die "S3 needs --s3-endpoint, --s3-bucket, --s3-credential and --s3-seal-key together"
		[[ -r $s3_cred ]] || die "--s3-credential \`$s3_cred\` cannot be read"
		[[ -r $s3_seal ]] || die "--s3-seal-key \`$s3_seal\` cannot be read"
		(($(head -n 1 "$s3_seal" | tr -d ' \t\r\n' | wc -c) >= 32)) ||
			die "--s3-seal-key \`$s3_seal\` needs at least 32 characters on its first line (head -c 32 /dev/urandom | base64)"
	fi
fi
for f in "$cred_file" "$key_file"; do [[ -z $f || -r $f ]] || die "\`$f\` cannot be read"; done
domain=${domain:-cloche.localhost}
[[ $(id -u) == 0 || -n $root ]] || die "run it as root (or with --root DIR)"
R=${root%/}
if [[ -n $root ]]; then
	mkdir -p "$R"
	build=0 start=0
fi

# --- build ---------------------------------------------------------------------
if ((build)); then
	say "installing the build dependencies and building (scripts/install-deps.sh, make)"
	scripts/install-deps.sh
	make -s -j"$(nproc)" all
fi
for b in cloche-portal cloche-node cloche-proxy cloche; do
	[[ -x build/bin/$b ]] || die "build/bin/$b is missing: build first (make), or drop --no-build"
done

# --- files -----------------------------------------------------------------------
install -d -m 0755 "$R/usr/local/bin" "$R/usr/local/share/doc/cloche" "$R/etc/systemd/system" "$R/etc/cloche"
install -d -m 0700 "$R/etc/cloche/credentials"
bins=(cloche)
((portal)) && bins+=(cloche-portal)
((node)) && bins+=(cloche-node cloche-proxy)
for b in "${bins[@]}"; do install -m 0755 "build/bin/$b" "$R/usr/local/bin/$b"; done
install -m 0644 docs/*.md "$R/usr/local/share/doc/cloche/"
say "installed ${bins[*]} in $R/usr/local/bin"

units=()
if ((portal)); then
	units+=(cloche-portal)
	install -d -m 0755 "$R/usr/local/lib/cloche"
	install -m 0755 deploy/backup-portal.sh "$R/usr/local/lib/cloche/backup-portal.sh"
	install -m 0644 deploy/systemd/cloche-portal-backup.service deploy/systemd/cloche-portal-backup.timer \
		"$R/etc/systemd/system/"
fi
((node)) && units+=(cloche-node cloche-proxy)
for u in "${units[@]}"; do install -m 0644 "deploy/systemd/$u.service" "$R/etc/systemd/system/$u.service"; done

# put_secret NAME [SOURCE]: /etc/cloche/credentials/NAME from SOURCE, or a
# new random one (the portal's side), unless it exists.
put_secret() {
	local dst=$R/etc/cloche/credentials/$1
	if [[ -s $dst ]]; then
		say "kept $dst"
	elif [[ -n ${2:-} ]]; then
		install -m 0600 "$2" "$dst"
		say "wrote $dst"
	else
		(umask 077 && head -c 48 /dev/urandom | base64 -w0 >"$dst")
		say "made $dst (copy it to every node: --credentials-from this machine)"
	fi
}
if [[ -n $from ]]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	scp -q "$from:/etc/cloche/credentials/node.cred" "$from:/etc/cloche/credentials/token.key" "$tmp/" ||
		die "could not copy the secrets from $from (ssh as root to it must work)"
	cred_file=$tmp/node.cred key_file=$tmp/token.key
fi
put_secret node.cred "$cred_file"
put_secret token.key "$key_file"
[[ -z $s3_cred ]] || put_secret s3 "$s3_cred"
[[ -z $s3_seal ]] || put_secret s3-seal "$s3_seal"

# conf NAME: /etc/cloche/NAME.conf from deploy/etc/NAME.conf with this
# installation's values, unless it exists.
conf() {
	local dst=$R/etc/cloche/$1.conf
	if [[ -e $dst ]]; then
		say "kept $dst (remove it to have it written again)"
		return
	fi
	sed -e "s|sandboxes\.example\.com|$domain|g" \
		-e "s|http://portal\.example\.com:7000|$portal_url|" \
		-e "s|^allowed-hosts = .*|allowed-hosts = $allowed|" \
		-e "s|^advertise-url = .*|advertise-url = http://$advertise:7070|" \
		-e "s|^advertise = .*|advertise = $advertise:80|" \
		-e "s|^trusted-peers = .*|trusted-peers = ${peers:-$advertise}|" \
		-e "s|^warm-pool = .*|warm-pool = desktop=$warm|" \
		-e "s|^max-sandboxes = .*|max-sandboxes = $maxsb|" \
		"deploy/etc/$1.conf" >"$dst.tmp"
	if [[ $1 == node && -n $s3_endpoint ]]; then
		sed -i -e "s|^#s3-endpoint = .*|s3-endpoint = $s3_endpoint|" -e "s|^#s3-bucket = .*|s3-bucket = $s3_bucket|" \
			-e "s|^#s3-region = .*|s3-region = ${s3_region:-us-east-1}|" -e "s|^#s3-prefix = .*|s3-prefix = $s3_prefix|" \
			-e "s|^#s3-credential-file = .*|s3-credential-file = /etc/cloche/credentials/s3|" \
			-e "s|^#s3-seal-key-file = .*|s3-seal-key-file = /etc/cloche/credentials/s3-seal|" "$dst.tmp"
	fi
	if [[ $1 == node && $role == all ]]; then
		sed -i 's|^listen = 0.0.0.0|listen = 127.0.0.1|' "$dst.tmp"
	fi
	chmod 0644 "$dst.tmp"
	mv "$dst.tmp" "$dst"
	say "wrote $dst"
}
((portal)) && conf portal
((node)) && conf node && conf proxy

if [[ -n $root ]]; then
	say "installed under $R; users, the template and systemd were left alone"
	exit 0
fi

# --- users, template, services ---------------------------------------------------
getent group cloche >/dev/null || groupadd --system cloche
for u in cloche-portal cloche-proxy; do
	getent passwd "$u" >/dev/null ||
		useradd --system --gid cloche --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u"
done
if ((portal)); then
	install -d -o cloche-portal -g cloche -m 0700 /var/backups/cloche
fi
if ((node && build)); then
	say "building the desktop template into the pool (rootfs/build-template.sh)"
	rootfs/build-template.sh >/dev/null
fi
if ((start)); then
	if [[ $(ps -p 1 -o comm=) != systemd ]]; then
		say "systemd is not running here: start the services yourself (${units[*]})"
	else
		systemctl daemon-reload
		systemctl enable --now "${units[@]/%/.service}"
		((portal)) && systemctl enable --now cloche-portal-backup.timer
		say "started ${units[*]}"
	fi
fi
if ((portal)); then
	say "the first admin key: runuser -u cloche-portal -- cloche-portal --db /var/lib/cloche-portal/portal.db key-create admin admin"
fi
