/* What the API shows: sandboxes, nodes and templates as JSON, and errors. */
#include "portal/pt_nodes.h"
#include "portal/pt_thumb.h"

#include "common/json.h"
#include "common/sbtoken.h"

#include <string.h>

void pt_resp_err(struct hsrv_resp *resp, const struct err *e)
{
	int st = e->http_status ? e->http_status : 500;

	hsrv_resp_error(resp, st, NULL, e->msg);
	if (st == 503)
		hsrv_resp_header(resp, "Retry-After", "5");
}

/* The proxy URL of port on sandbox id: {port} and {id} replaced. */
static json_t *proxy_url(const struct pt_portal *p, const char *port, const char *id,
			 const char *suffix)
{
	char out[512];
	size_t o = 0;
	const char *s = p->cfg.proxy_url;

	while (*s && o + 1 < sizeof(out)) {
		const char *rep = NULL;

		if (strncmp(s, "{port}", 6) == 0)
			rep = port;
		else if (strncmp(s, "{id}", 4) == 0)
			rep = id;
		if (rep) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", rep);
			s += rep == port ? 6 : 4;
			if (o >= sizeof(out))
				o = sizeof(out) - 1;
			continue;
		}
		out[o++] = *s++;
	}
	out[o] = '\0';
	snprintf(out + o, sizeof(out) - o, "%s", suffix);
	return json_string(out);
}

static json_t *time_or_null(long long ms)
{
	char t[40];

	if (!ms)
		return json_null();
	pt_time_str(ms, t, sizeof(t));
	return json_string(t);
}

static json_t *parse_or(const char *text, json_t *def)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	if (!v)
		return def;
	json_decref(def);
	return v;
}

json_t *pt_view_share(const struct pt_portal *p, const struct pt_share *sh, long long now)
{
	json_t *v = pt_share_json(sh, now);
	struct shtoken t = {.mode = strcmp(sh->mode, "control") == 0 ? 'c' : 'v',
			    .expires = sh->expires_at / 1000};
	char tok[SHTOKEN_MAX], q[SHTOKEN_MAX + 16];
	struct err e = ERR_INIT;

	if (sh->revoked_at || sh->expires_at <= now)
		return v;
	snprintf(t.id, sizeof(t.id), "%s", sh->sandbox);
	snprintf(t.share, sizeof(t.share), "%s", sh->id);
	if (shtoken_make(p->cfg.token_key, p->cfg.token_key_len, &t, tok, sizeof(tok), &e) == -1)
		return v;
	snprintf(q, sizeof(q), "/?token=%s", tok);
	json_object_set_new(v, "url", proxy_url(p, "6080", sh->sandbox, q));
	json_object_set_new(v, "token", json_string(tok));
	return v;
}

json_t *pt_view_sb(const struct pt_portal *p, const struct pt_sb *sb, bool with_token)
{
	char tok[SBTOKEN_MAX] = "";
	struct err e = ERR_INIT;
	json_t *v, *urls;
	bool live = !pt_state_final(sb->state) && sb->state != PT_RELEASING;

	if (with_token && live &&
	    sbtoken_make(p->cfg.token_key, p->cfg.token_key_len, sb->id, tok, sizeof(tok), &e) == -1)
		tok[0] = '\0';
	{
		char q[SBTOKEN_MAX + 16];

		snprintf(q, sizeof(q), "/?token=%s", tok);
		urls = json_pack("{s:o, s:o, s:{s:o, s:o, s:o}, s:o}", "novnc",
				 proxy_url(p, "6080", sb->id, tok[0] ? q : "/"), "vnc",
				 proxy_url(p, "6080", sb->id, "/websockify"), "mcp", "shell",
				 proxy_url(p, "8889", sb->id, "/mcp"), "desktop",
				 proxy_url(p, "8100", sb->id, "/mcp"), "browser",
				 proxy_url(p, "7999", sb->id, "/mcp"), "port",
				 proxy_url(p, "{port}", sb->id, ""));
	}
	v = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s, s:o, s:o, s:o, s:o, s:I, s:b,"
		      " s:{s:I, s:I, s:I}, s:o, s:o, s:o, s:o}",
		      "id", sb->id, "state", pt_state_name(sb->state), "template", sb->template,
		      "node", sb->node[0] ? sb->node : NULL, "node_sandbox_id",
		      sb->node_sid[0] ? sb->node_sid : NULL, "owner", sb->owner, "created_at",
		      time_or_null(sb->created_at), "updated_at", time_or_null(sb->updated_at),
		      "ready_at", time_or_null(sb->ready_at), "expires_at",
		      time_or_null(sb->expires_at), "ttl", (json_int_t)sb->ttl_s, "persist",
		      sb->persist, "resources", "memory_mb", (json_int_t)sb->memory_mb, "cpus",
		      (json_int_t)sb->cpus, "pids", (json_int_t)sb->pids, "egress",
		      parse_or(sb->egress, json_string("none")), "labels",
		      parse_or(sb->labels, json_object()), "metadata",
		      parse_or(sb->metadata, json_object()), "urls", urls);
	if (!v)
		return NULL;
	if (tok[0])
		json_object_set_new(v, "token", json_string(tok));
	if (sb->reason[0])
		json_object_set_new(v, "reason", json_string(sb->reason));
	json_object_set_new(v, "last_activity_at", time_or_null(sb->last_activity_at));
	json_object_set_new(v, "idle_timeout", json_integer(sb->idle_timeout_s));
	json_object_set_new(v, "offload_after", json_integer(sb->offload_after_s));
	json_object_set_new(v, "hibernated_at", time_or_null(sb->hibernated_at));
	json_object_set_new(v, "offloaded_at", time_or_null(sb->offloaded_at));
	json_object_set_new(v, "checkpoint", parse_or(sb->checkpoint, json_null()));
	json_object_set_new(v, "forked_from",
			    sb->forked_from[0] ? json_string(sb->forked_from) : json_null());
	json_object_set_new(v, "desktop",
			    parse_or(sb->desktop, json_pack("{s:b, s:b, s:b}", "clipboard", 1,
							     "resize", 0, "record", 0)));
	if (sb->state == PT_READY) {
		json_t *d = pt_thumb_desktop(p, sb->id);

		if (d)
			json_object_set_new(v, "desktop_state", d);
	}
	return v;
}

json_t *pt_view_node(const struct pt_node *n)
{
	json_t *v = json_pack("{s:s, s:s, s:s, s:o, s:o}", "name", n->name, "url", n->url, "state",
			      !n->heard ? "unknown" : n->up ? "up" : "down", "last_heartbeat",
			      n->heard ? time_or_null(n->last_seen) : json_null(), "capacity",
			      n->capacity ? json_deep_copy(n->capacity) : json_null());
	json_t *tmpls = json_array();
	size_t i;
	json_t *t;
	long long count = 0;

	if (n->templates)
		json_array_foreach(n->templates, i, t) {
			json_t *name = json_object_get(t, "template");

			if (json_is_string(name))
				json_array_append(tmpls, name);
		}
	if (n->sandboxes)
		count = (long long)json_array_size(n->sandboxes);
	json_object_set_new(v, "templates", tmpls);
	json_object_set_new(v, "sandboxes", json_integer(count));
	return v;
}

json_t *pt_view_templates(const struct pt_portal *p)
{
	json_t *byname = json_object(), *out = json_array();
	const char *k;
	json_t *v;

	for (const struct pt_node *n = p->nodes; n; n = n->next) {
		size_t i;
		json_t *t, *s;

		if (!n->up || !n->templates)
			continue;
		json_array_foreach(n->templates, i, t) {
			const char *full = json_string_value(json_object_get(t, "template"));
			const char *name = json_string_value(json_object_get(t, "name"));
			json_t *ent, *vers, *nodes;
			long long warm = 0;

			if (!full || !name)
				continue;
			ent = json_object_get(byname, name);
			if (!ent) {
				ent = json_pack("{s:s, s:[], s:[], s:i}", "name", name, "versions",
						"nodes", "warm_ready", 0);
				json_object_set_new(byname, name, ent);
			}
			vers = json_object_get(ent, "versions");
			nodes = json_object_get(ent, "nodes");
			{
				bool seen = false;
				size_t j;
				json_t *x;

				json_array_foreach(vers, j, x)
					seen |= strcmp(json_string_value(x), full) == 0;
				if (!seen)
					json_array_append_new(vers, json_string(full));
				seen = false;
				json_array_foreach(nodes, j, x)
					seen |= strcmp(json_string_value(x), n->name) == 0;
				if (!seen)
					json_array_append_new(nodes, json_string(n->name));
			}
			size_t si;

			json_array_foreach(n->sandboxes, si, s) {
				const char *st = json_string_value(json_object_get(s, "state"));
				const char *tt = json_string_value(json_object_get(s, "template"));

				if (json_is_true(json_object_get(s, "pooled")) && st && tt &&
				    strcmp(st, "ready") == 0 && strcmp(tt, full) == 0)
					warm++;
			}
			json_object_set_new(ent, "warm_ready",
					    json_integer(json_integer_value(json_object_get(
								 ent, "warm_ready")) + warm));
		}
	}
	json_object_foreach(byname, k, v)
		json_array_append(out, v);
	json_decref(byname);
	return out;
}
