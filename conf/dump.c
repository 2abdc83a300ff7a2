/* The resolved configuration as INI, for `boxgate config check`. What it
 * prints loads again to the same boxes: resolved values that are no key
 * (HostName, where a box came from) are comments. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/conf.h"

typedef struct dumper {
	void (*out)(void *ctx, const char *line);
	void *ctx;
} dumper;

static void emit(dumper *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(dumper *d, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	d->out(d->ctx, s ? s : "");
	free(s);
}

/* `key = a<sep>b<sep>c`, or `key = (none)` for no items. */
static void emit_joined(dumper *d, const char *key, const char *sep, char *const *v, size_t n)
{
	strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sb, "%s%s", i ? sep : "", v[i]);
	emit(d, "%s = %s", key, n ? strbuf_str(&sb) : "(none)");
	strbuf_release(&sb);
}

/* `key = a b c` (space-separated, as the known_hosts key takes it). */
static void emit_list(dumper *d, const char *key, char *const *v, size_t n)
{
	emit_joined(d, key, " ", v, n);
}

static void dump_box(dumper *d, const conf_box *b)
{
	bool ssh = b->transport == CONF_TRANSPORT_SSH;
	emit(d, "[box %s]", b->name);
	if (b->builtin)
		emit(d, "; built-in");
	else
		emit(d, "; defined at %s:%d", b->file, b->line);
	emit(d, "transport = %s", ssh ? "ssh" : "local");
	if (ssh) {
		emit(d, "host = %s", b->host);
		emit(d, "; hostname = %s", b->hostname);
		emit(d, "user = %s", b->user);
		emit(d, "port = %d", b->port);
		if (b->n_identities)
			emit_joined(d, "identity", ", ", b->identities, b->n_identities);
		else
			emit(d, "; identity: none (ssh-agent keys only)");
		emit_list(d, "known_hosts", b->known_hosts, b->n_known_hosts);
		emit_list(d, "; global_known_hosts", b->global_known_hosts,
			  b->n_global_known_hosts);
		emit(d, "host_key_check = %s",
		     b->host_key_check == CONF_HKC_ACCEPT_NEW ? "accept-new" : "strict");
		emit(d, "connect_timeout_s = %d", b->connect_timeout_s);
		if (b->ssh_connect_timeout_s == 0)
			emit(d, "; ssh_config ConnectTimeout 0 is \"no timeout\" to ssh: boxgate "
				"keeps a deadline");
		else if (b->ssh_connect_timeout_s > 0 &&
			 b->ssh_connect_timeout_s != b->connect_timeout_s)
			emit(d, "; ssh_config ConnectTimeout %d is overridden by connect_timeout_s",
			     b->ssh_connect_timeout_s);
		emit(d, "keepalive_s = %d", b->keepalive_s);
		emit(d, "control_persist_s = %g", b->control_persist_ms / 1000.0);
		if (b->jump) {
			emit(d, "jump = %s", b->jump);
			emit(d, "; jump set at %s", b->jump_at);
			for (size_t i = 0; i < b->n_hops; i++) {
				const conf_box *h = b->hops[i];
				emit(d, ";   hop %zu: %s@%s port %d (%s)", i + 1, h->user,
				     h->hostname, h->port,
				     h->host_key_check == CONF_HKC_ACCEPT_NEW ? "accept-new"
									      : "strict");
			}
		}
		if (b->unsupported)
			emit(d, "; unsupported: %s", b->unsupported);
	}
	if (b->repo)
		emit(d, "repo = %s", b->repo);
	if (b->gate)
		emit(d, "gate = %s", b->gate);
	else
		emit(d, "; gate: not set");
	emit(d, "python = %s", b->python);
	if (b->gpus)
		emit(d, "gpus = %s", b->gpus);
	else
		emit(d, "; gpus: all the box has");
	emit(d, "require_gpu = %s", b->gpu_policy == CONF_GPU_REQUIRED ? "yes" : "no");
	emit(d, "no_baseline = %s", b->no_baseline ? "yes" : "no");
	emit(d, "gate_timeout_s = %d", b->gate_timeout_s);
	emit(d, "heartbeat_timeout_s = %g", b->heartbeat_timeout_ms / 1000.0);
	emit(d, "kill_grace_s = %g", b->kill_grace_ms / 1000.0);
	emit(d, "lock_wait_s = %d", b->lock_wait_s);
	if (b->n_allow)
		emit_list(d, "allow", b->allow, b->n_allow);
	for (size_t i = 0; i < b->n_env; i++)
		emit(d, "env %s = %s=%s", b->env[i].flag, b->env[i].name, b->env[i].value);
	if (b->num_workers_env)
		emit(d, "num_workers_env = %s", b->num_workers_env);
	if (b->validate_stub)
		emit_list(d, "validate_stub", b->validate_stub, b->n_validate_stub);
	if (b->kernel_paths)
		emit_list(d, "kernel_paths", b->kernel_paths, b->n_kernel_paths);
	if (b->overlay_env)
		emit(d, "overlay_env = %s", b->overlay_env);
	if (b->validate_drop)
		emit_list(d, "validate_drop", b->validate_drop, b->n_validate_drop);
}

void conf_dump(const conf *c, void (*out)(void *ctx, const char *line), void *ctx)
{
	dumper d = {out, ctx};
	emit(&d, "; configuration: %s", c->path ? c->path : "none found (built-in box only)");
	emit(&d, "; root: %s", c->root);
	emit(&d, "[defaults]");
	emit(&d, "ssh_config = %s", c->ssh_config);
	if (c->results)
		emit(&d, "results = %s", c->results);
	if (c->max_cv >= 0) {
		/* A plain decimal, as conf_parse_percent reads it back: no exponent. */
		char pct[64];
		snprintf(pct, sizeof(pct), "%.9f", c->max_cv);
		char *e = pct + strlen(pct) - 1;
		while (*e == '0')
			*e-- = '\0';
		if (*e == '.')
			*e = '\0';
		emit(&d, "max_cv = %s", pct);
	}
	for (size_t i = 0; i < c->n_boxes; i++) {
		emit(&d, "%s", "");
		dump_box(&d, &c->boxes[i]);
	}
	for (size_t i = 0; i < c->n_pools; i++) {
		const conf_pool *p = &c->pools[i];
		strbuf sb = STRBUF_INIT;
		for (size_t j = 0; j < p->n_slots; j++) {
			strbuf_addf(&sb, "%s%s", j ? ", " : "", p->slots[j].box);
			if (p->slots[j].gpus)
				strbuf_addf(&sb, ":%s", p->slots[j].gpus);
		}
		emit(&d, "%s", "");
		emit(&d, "[pool %s]", p->name);
		emit(&d, "; defined at %s:%d", p->file, p->line);
		emit(&d, "slots = %s", strbuf_str(&sb));
		strbuf_release(&sb);
		if (p->n_disabled) {
			emit_list(&d, "disabled", p->disabled, p->n_disabled);
			emit(&d, "disabled_why = %s", p->disabled_why);
		}
	}
	emit(&d, "%s", "");
	emit(&d, "[verify]");
	for (size_t i = 0; i < c->n_verify; i++) {
		const conf_verify *v = &c->verify[i];
		if (v->line) {
			emit(&d, "; %s:%d", v->file, v->line);
			emit(&d, "%s = %s", v->pattern, v->command);
		} else {
			emit(&d, "; built-in: %s = %s", v->pattern, v->command);
		}
	}
}
