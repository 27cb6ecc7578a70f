/* What the workers share beyond the route table: the count of connections
 * per client address, under one lock; see px_proxy.h. */
#include "proxy/px_proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned addr_hash(const char *a)
{
	unsigned h = 2166136261u;

	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 16777619u;
	return h % 1024;
}

bool px_addr_take(struct px_proxy *p, const char *addr)
{
	struct px_addr_count *a;
	unsigned h = addr_hash(addr);
	bool ok = true;

	pthread_mutex_lock(&p->addr_mu);
	for (a = p->addrs[h]; a && strcmp(a->addr, addr) != 0; a = a->next)
		;
	if (!a && (a = calloc(1, sizeof(*a))) != NULL) {
		snprintf(a->addr, sizeof(a->addr), "%s", addr);
		a->next = p->addrs[h];
		p->addrs[h] = a;
	}
	if (!a || a->n >= p->s.max_conns_client)
		ok = false;
	else
		a->n++;
	pthread_mutex_unlock(&p->addr_mu);
	return ok;
}

void px_addr_give(struct px_proxy *p, const char *addr)
{
	struct px_addr_count **pp;
	unsigned h = addr_hash(addr);

	pthread_mutex_lock(&p->addr_mu);
	for (pp = &p->addrs[h]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->addr, addr) == 0) {
			if (--(*pp)->n <= 0) {
				struct px_addr_count *a = *pp;

				*pp = a->next;
				free(a);
			}
			break;
		}
	pthread_mutex_unlock(&p->addr_mu);
}
