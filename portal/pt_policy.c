/* Parsing and lookup of the hibernation policy; see pt_policy.h. */
#include "portal/pt_policy.h"

#include "common/cfg.h"

#include <stdio.h>
#include <string.h>

/* One "key=DUR" of an entry into *out (seconds). */
static int one_value(const char *kv, size_t len, long long *idle, long long *offload,
		     struct err *e)
{
	char buf[64];
	const char *eq;
	long long ms;
	long long *out;

	if (len >= sizeof(buf))
		return err_set(e, 0, "`%.*s` is too long", (int)len, kv);
	snprintf(buf, sizeof(buf), "%.*s", (int)len, kv);
	eq = strchr(buf, '=');
	if (!eq)
		return err_set(e, 0, "`%s` is not idle=DURATION or offload=DURATION", buf);
	if ((size_t)(eq - buf) == 4 && strncmp(buf, "idle", 4) == 0)
		out = idle;
	else if ((size_t)(eq - buf) == 7 && strncmp(buf, "offload", 7) == 0)
		out = offload;
	else
		return err_set(e, 0, "`%.*s` is not idle or offload", (int)(eq - buf), buf);
	if (cfg_parse_duration(eq + 1, &ms, e) == -1)
		return err_wrap(e, "%.*s", (int)(eq - buf), buf);
	if (ms % 1000 != 0)
		return err_set(e, 0, "`%s`: whole seconds only", buf);
	*out = ms / 1000;
	return 0;
}

int pt_policy_parse(struct pt_policy *pol, const char *spec, struct err *e)
{
	const char *s = spec;

	pol->n = 0;
	while (s && *s) {
		const char *end = strchr(s, ';');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *colon;
		struct pt_policy_tmpl *t;
		const char *v, *vend;

		while (len && (*s == ' ' || *s == '\t')) {
			s++;
			len--;
		}
		colon = memchr(s, ':', len);
		if (len == 0) {
			s = end ? end + 1 : NULL;
			continue;
		}
		if (!colon || colon == s || (size_t)(colon - s) >= sizeof(t->name) ||
		    memchr(s, '@', (size_t)(colon - s)))
			return err_set(e, 0, "`%.*s` is not TEMPLATE:idle=DURATION,offload=DURATION",
				       (int)len, s);
		if (pol->n == PT_POLICY_MAX)
			return err_set(e, 0, "more than %d templates", PT_POLICY_MAX);
		t = &pol->t[pol->n];
		snprintf(t->name, sizeof(t->name), "%.*s", (int)(colon - s), s);
		for (int i = 0; i < pol->n; i++)
			if (strcmp(pol->t[i].name, t->name) == 0)
				return err_set(e, 0, "template `%s` is named twice", t->name);
		t->idle_s = t->offload_s = -1;
		if (colon + 1 == s + len || s[len - 1] == ',')
			return err_set(e, 0, "`%.*s`: an empty value", (int)len, s);
		for (v = colon + 1; v < s + len; v = vend + 1) {
			vend = memchr(v, ',', (size_t)(s + len - v));
			if (!vend)
				vend = s + len;
			while (v < vend && *v == ' ')
				v++;
			if (v == vend)
				return err_set(e, 0, "`%.*s`: an empty value", (int)len, s);
			if (one_value(v, (size_t)(vend - v), &t->idle_s, &t->offload_s, e) == -1)
				return err_wrap(e, "template `%s`", t->name);
		}
		pol->n++;
		s = end ? end + 1 : NULL;
	}
	return 0;
}

void pt_policy_for(const struct pt_policy *pol, const char *template, long long *idle_s,
		   long long *offload_s)
{
	size_t n = strcspn(template, "@");

	*idle_s = pol->idle_s;
	*offload_s = pol->offload_s;
	for (int i = 0; i < pol->n; i++)
		if (strlen(pol->t[i].name) == n && strncmp(pol->t[i].name, template, n) == 0) {
			if (pol->t[i].idle_s >= 0)
				*idle_s = pol->t[i].idle_s;
			if (pol->t[i].offload_s >= 0)
				*offload_s = pol->t[i].offload_s;
			return;
		}
}
