/* Words and codes for results, so every command reports them the same way. */
#include "sync/sync.h"
#include "sync/internal.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/exit.h"
#include "base/json.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

const char *sync_state_name(sync_state s)
{
	switch (s) {
	case SYNC_PENDING: return "not done";
	case SYNC_UNCHANGED: return "unchanged";
	case SYNC_UPDATED: return "updated";
	case SYNC_CREATED: return "created";
	case SYNC_WOULD_UPDATE: return "would update";
	case SYNC_WOULD_CREATE: return "would create";
	case SYNC_VERIFIED: return "verified";
	case SYNC_NOT_APPLIED: return "not applied";
	case SYNC_VERIFY_FAILED: return "verify failed";
	case SYNC_FAILED: return "failed";
	case SYNC_ROLLED_BACK: return "rolled back";
	case SYNC_WOULD_ROLL_BACK: return "would roll back";
	case SYNC_SAME: return "same";
	case SYNC_DIFFERS: return "differs";
	case SYNC_MISSING: return "missing";
	case SYNC_NO_LOCAL: return "no local file";
	case SYNC_ALREADY_ROLLED_BACK: return "already rolled back";
	}
	return "?";
}

const char *sync_state_key(sync_state s)
{
	switch (s) {
	case SYNC_PENDING: return "not_done";
	case SYNC_UNCHANGED: return "unchanged";
	case SYNC_UPDATED: return "updated";
	case SYNC_CREATED: return "created";
	case SYNC_WOULD_UPDATE: return "would_update";
	case SYNC_WOULD_CREATE: return "would_create";
	case SYNC_VERIFIED: return "verified";
	case SYNC_NOT_APPLIED: return "not_applied";
	case SYNC_VERIFY_FAILED: return "verify_failed";
	case SYNC_FAILED: return "failed";
	case SYNC_ROLLED_BACK: return "rolled_back";
	case SYNC_WOULD_ROLL_BACK: return "would_roll_back";
	case SYNC_SAME: return "same";
	case SYNC_DIFFERS: return "differs";
	case SYNC_MISSING: return "missing";
	case SYNC_NO_LOCAL: return "no_local_file";
	case SYNC_ALREADY_ROLLED_BACK: return "already_rolled_back";
	}
	return "unknown";
}

bool sync_file_created_by_push(const sync_file *f)
{
	return f->pushed && f->btype == SYNC_FT_MISSING;
}

bool sync_state_failed(sync_state s)
{
	return s == SYNC_VERIFY_FAILED || s == SYNC_FAILED || s == SYNC_PENDING;
}

/* Length of the UTF-8 sequence at s (1..4), 0 when it is not valid UTF-8. */
/* Length of the UTF-8 sequence at s in a NUL-terminated string, 0 when none. */
static size_t utf8_len(const unsigned char *s)
{
	return bg_utf8_seq(s, s + strnlen((const char *)s, 4), NULL);
}

char *sync_path_display(const char *path)
{
	const unsigned char *s = (const unsigned char *)path;
	bool plain = *s != '\0';
	for (size_t i = 0; s[i];) {
		size_t n = utf8_len(s + i);
		if (n == 0 || s[i] < 0x20 || s[i] == 0x7f || s[i] == '"' || s[i] == '\\') {
			plain = false;
			break;
		}
		i += n;
	}
	if (plain)
		return xstrdup(path);
	strbuf sb = STRBUF_INIT;
	strbuf_addch(&sb, '"');
	for (size_t i = 0; s[i];) {
		size_t n = utf8_len(s + i);
		unsigned char c = s[i];
		if (n > 1) {
			strbuf_add(&sb, s + i, n);
			i += n;
			continue;
		}
		i++;
		switch (c) {
		case '\n': strbuf_addstr(&sb, "\\n"); break;
		case '\t': strbuf_addstr(&sb, "\\t"); break;
		case '\r': strbuf_addstr(&sb, "\\r"); break;
		case '"': strbuf_addstr(&sb, "\\\""); break;
		case '\\': strbuf_addstr(&sb, "\\\\"); break;
		default:
			if (n == 0 || c < 0x20 || c == 0x7f)
				strbuf_addf(&sb, "\\x%02x", c);
			else
				strbuf_addch(&sb, (char)c);
		}
	}
	strbuf_addch(&sb, '"');
	return strbuf_detach(&sb);
}

static bool unreachable(int rc)
{
	return rc == BG_ECONNECT || rc == BG_EHOSTKEY || rc == BG_EAUTH || rc == BG_ETIMEOUT ||
	       rc == BG_EUNSUPPORTED;
}

int sync_exit_code(const sync_box *boxes, size_t n)
{
	bool verify = false, conn = false, other = false;
	for (size_t i = 0; i < n; i++) {
		const sync_box *b = &boxes[i];
		if (b->rc < 0) {
			if (unreachable(b->rc))
				conn = true;
			else
				other = true;
		}
		for (size_t k = 0; b->files && k < b->plan->n; k++) {
			const sync_file *f = &b->files[k];
			if (f->state == SYNC_VERIFY_FAILED)
				verify = true;
			else if (f->state == SYNC_FAILED && unreachable(f->code))
				conn = true;
			else if (f->state == SYNC_FAILED ||
				 (f->state == SYNC_PENDING && b->rc == 0))
				other = true;
		}
	}
	int code = BG_EXIT_OK;
	if (verify)
		code = bg_exit_merge(code, BG_EXIT_VERIFY);
	if (conn)
		code = bg_exit_merge(code, BG_EXIT_CONNECT);
	if (other)
		code = bg_exit_merge(code, BG_EXIT_FAIL);
	return code;
}

/* Adds `s` as KEY when it is UTF-8, else base64 as KEY_b64. */
static void json_add_text(cJSON *o, const char *key, const char *s)
{
	bg_json_add_bytes(o, key, s, strlen(s));
}

char *sync_file_describe(const sync_box *b, size_t i)
{
	const sync_item *it = &b->plan->items[i];
	const sync_file *f = &b->files[i];
	strbuf sb = STRBUF_INIT;
	char *shown = sync_path_display(it->rel);
	strbuf_addf(&sb, "%s: %s", shown, sync_state_name(f->state));
	free(shown);
	const char *sep = " (";
#define NOTE(...)                                                                                  \
	do {                                                                                       \
		strbuf_addstr(&sb, sep);                                                           \
		strbuf_addf(&sb, __VA_ARGS__);                                                     \
		sep = ", ";                                                                        \
	} while (0)
	switch (f->state) {
	case SYNC_UPDATED:
	case SYNC_CREATED:
	case SYNC_ROLLED_BACK:
		if (f->nsha[0])
			NOTE("sha256 %.12s confirmed on the box", f->nsha);
		if (f->state == SYNC_ROLLED_BACK && f->keep) {
			char *k = sync_path_display(f->keep);
			NOTE("the version changed on the box kept as %s", k);
			free(k);
		} else if (f->state == SYNC_ROLLED_BACK) {
			NOTE("the version push placed dropped: push it again to restore it");
		} else if (f->bak_after) {
			NOTE("old one kept as .bak");
		}
		break;
	case SYNC_ALREADY_ROLLED_BACK:
		NOTE("the target already is its .bak: nothing done, a second rollback never "
		     "swaps back");
		break;
	case SYNC_UNCHANGED:
	case SYNC_SAME: NOTE("sha256 %.12s", it->sha); break;
	case SYNC_WOULD_UPDATE:
		NOTE("differs: %.12s on the box, %.12s here", f->rsha[0] ? f->rsha : "size",
		     it->sha);
		break;
	case SYNC_DIFFERS:
		if (f->msg)
			NOTE("%s", f->msg);
		else if (f->rsha[0])
			NOTE("%.12s on the box, %.12s here", f->rsha, it->sha);
		else
			NOTE("%llu bytes on the box, %llu here", (unsigned long long)f->rsize,
			     (unsigned long long)it->size);
		break;
	case SYNC_NO_LOCAL:
		if (f->rsha[0])
			NOTE("sha256 %.12s on the box", f->rsha);
		break;
	default: break;
	}
	bool status = f->state == SYNC_SAME || f->state == SYNC_DIFFERS ||
		      f->state == SYNC_MISSING || f->state == SYNC_NO_LOCAL;
	if (status && sync_file_created_by_push(f))
		NOTE("created by push, no .bak");
	else if (status && f->pushed)
		NOTE("placed by push");
	if (status && f->pushed && f->rsha[0] && strcmp(f->rsha, f->pushed_sha) != 0)
		NOTE("changed on the box since push placed %.12s", f->pushed_sha);
	if ((status || f->state == SYNC_UNCHANGED || f->state == SYNC_WOULD_UPDATE) &&
	    f->btype == SYNC_FT_FILE)
		NOTE(".bak present");
	if (f->have_stat && f->state != SYNC_FAILED && it->local && (f->rmode & 0777) != it->mode &&
	    (f->state == SYNC_SAME || f->state == SYNC_DIFFERS))
		NOTE("mode %03o on the box, %03o here", f->rmode & 0777, it->mode);
	if (f->stale_removed)
		NOTE("%d stale temporary file%s removed", f->stale_removed,
		     f->stale_removed == 1 ? "" : "s");
	if (f->stale_found > f->stale_removed)
		NOTE("%d temporary file%s of an interrupted or running push",
		     f->stale_found - f->stale_removed,
		     f->stale_found - f->stale_removed == 1 ? "" : "s");
#undef NOTE
	if (strcmp(sep, ", ") == 0)
		strbuf_addch(&sb, ')');
	return strbuf_detach(&sb);
}

cJSON *sync_file_json(const sync_box *b, size_t i)
{
	const sync_item *it = &b->plan->items[i];
	const sync_file *f = &b->files[i];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", b->box->name);
	json_add_text(o, "path", it->rel);
	if (it->local)
		json_add_text(o, "local", it->local);
	cJSON_AddStringToObject(o, "state", sync_state_key(f->state));
	if (it->sha[0])
		cJSON_AddStringToObject(o, "sha256", it->sha);
	if (f->rsha[0])
		cJSON_AddStringToObject(o, "box_sha256", f->rsha);
	if (f->nsha[0] &&
	    (f->state == SYNC_UPDATED || f->state == SYNC_CREATED || f->state == SYNC_ROLLED_BACK))
		cJSON_AddStringToObject(o, "confirmed_sha256", f->nsha);
	if (f->rtype != SYNC_FT_UNKNOWN) {
		const char *t = "unknown";
		switch (f->rtype) {
		case SYNC_FT_FILE: t = "file"; break;
		case SYNC_FT_MISSING: t = "missing"; break;
		case SYNC_FT_DIR: t = "directory"; break;
		case SYNC_FT_SYMLINK: t = "symlink"; break;
		case SYNC_FT_UNREADABLE: t = "unreadable"; break;
		case SYNC_FT_OTHER: t = "other"; break;
		default: break;
		}
		cJSON_AddStringToObject(o, "box_type", t);
	}
	cJSON_AddBoolToObject(o, "bak",
			      f->state == SYNC_PENDING ? f->btype == SYNC_FT_FILE : f->bak_after);
	if (f->state == SYNC_SAME || f->state == SYNC_DIFFERS || f->state == SYNC_MISSING ||
	    f->state == SYNC_NO_LOCAL || f->pushed) {
		cJSON_AddBoolToObject(o, "pushed", f->pushed);
		cJSON_AddBoolToObject(o, "created_by_push", sync_file_created_by_push(f));
	}
	if (f->pushed) {
		char iso[32];
		time_t t = (time_t)f->pushed_at;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
		cJSON_AddStringToObject(o, "pushed_sha256", f->pushed_sha);
		cJSON_AddStringToObject(o, "pushed_at", iso);
	}
	if (f->have_stat) {
		char m[8];
		snprintf(m, sizeof(m), "%04o", f->rmode);
		cJSON_AddStringToObject(o, "box_mode", m);
		cJSON_AddNumberToObject(o, "box_size", (double)f->rsize);
	}
	if (it->local) {
		char m[8];
		snprintf(m, sizeof(m), "%04o", it->mode);
		cJSON_AddStringToObject(o, "mode", m);
		cJSON_AddNumberToObject(o, "size", (double)it->size);
	}
	cJSON_AddNumberToObject(o, "stale_found", f->stale_found);
	cJSON_AddNumberToObject(o, "stale_removed", f->stale_removed);
	if (f->msg)
		json_add_text(o, sync_state_failed(f->state) ? "error" : "note", f->msg);
	else if (sync_state_failed(f->state) && b->rc < 0)
		json_add_text(o, "error", b->err.msg);
	if (f->warn)
		json_add_text(o, "warning", f->warn);
	if (f->state == SYNC_VERIFY_FAILED) {
		cJSON_AddNumberToObject(o, "verify_exit", f->verify_rc);
		json_add_text(o, "verify_output", f->verify_out ? f->verify_out : "");
	}
	return o;
}

void sync_count(const sync_box *boxes, size_t n, size_t counts[SYNC_STATE_COUNT])
{
	memset(counts, 0, sizeof(size_t) * SYNC_STATE_COUNT);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; boxes[i].files && k < boxes[i].plan->n; k++)
			counts[boxes[i].files[k].state]++;
}

void sync_file_fail(sync_box *b, size_t i, int code, const char *fmt, ...)
{
	sync_file *f = &b->files[i];
	char *shown = sync_path_display(sync_box_item(b, i)->rel);
	va_list ap;
	va_start(ap, fmt);
	char detail[1024];
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	free(f->msg);
	f->msg = xasprintf("%s: %s: %s", b->box->name, shown, detail);
	free(shown);
	f->state = SYNC_FAILED;
	f->code = code;
}

const char *sync_errtail(const sync_box *b)
{
	return b->errtail.len ? strbuf_str(&b->errtail) : "";
}
