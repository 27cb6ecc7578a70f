/* What the parts of cloche-proxy share: its settings, its counters and its
 * workers.  main.c fills a px_proxy, px_worker_loop runs the event loops,
 * px_machine and the px_conn files the connections, px_admin the
 * operator's endpoints. */
#ifndef PX_PROXY_H
#define PX_PROXY_H
#include "proxy/px_route.h"
#include "proxy/px_tls.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct px_settings {
	const char *domain;          /* sandbox names are {port}-{id}.<domain> */
	const char *listen;
	int port;
	const char *admin_listen;
	int admin_port;              /* 0: no admin listener */
	int workers;
	size_t head_max;             /* bytes of a request head */
	int head_timeout_ms;         /* to receive a whole head */
	int idle_timeout_ms;         /* a keep-alive connection between requests */
	int read_timeout_ms;         /* silence in the middle of an exchange */
	int tunnel_timeout_ms;       /* silence on a WebSocket or other upgrade */
	int connect_timeout_ms;      /* to get a connection into a sandbox */
	int wait_timeout_ms;         /* holding a request while a sandbox starts or wakes */
	int upstream_idle_ms;        /* a kept upstream connection */
	int drain_timeout_ms;        /* graceful shutdown */
	int max_conns_sandbox;       /* client connections per sandbox */
	int max_conns_client;        /* client connections per client address */
	int max_conns;               /* client connections in all */
	const unsigned char *token_key;
	size_t token_key_len;
	const char *credential;      /* node credential: the admin endpoints want it */
	const char *node_socket;
	const char *trusted_peers;   /* comma-separated addresses whose X-Forwarded-* count */
	struct px_tls *tls;          /* HTTPS on the listeners, or NULL */
};

/* Counters, all lock-free. */
struct px_stats {
	atomic_uint_fast64_t accepted, requests, bytes_in, bytes_out, upstream_connects,
		upstream_reused, tunnels, refused_limit, timeouts, bad_requests, share_cut;
	atomic_uint_fast64_t status[6]; /* answers by class: 1xx..5xx, [0] unused */
	atomic_int conns, tunnels_open;
};

struct px_worker;

struct px_proxy {
	struct px_settings s;
	struct px_routes *routes;
	struct px_stats st;
	struct px_worker **w;
	int nworkers;
	atomic_bool stopping;
	/* Connections per client address (a small open hash). */
	pthread_mutex_t addr_mu;
	struct px_addr_count *addrs[1024];
};

struct px_addr_count {
	char addr[48];
	int n;
	struct px_addr_count *next;
};

/* Counts one more connection from addr; false (and nothing counted) when
 * that would pass the per-address limit. */
bool px_addr_take(struct px_proxy *p, const char *addr);
void px_addr_give(struct px_proxy *p, const char *addr);

#endif
