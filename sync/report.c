/* Words and codes for results, so every command reports them the same way. */
#include "sync/sync.h"

#include <stdio.h>
#include <string.h>

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
	}
	return "?";
}

bool sync_state_failed(sync_state s)
{
	return s == SYNC_VERIFY_FAILED || s == SYNC_FAILED || s == SYNC_PENDING;
}

/* Length of the UTF-8 sequence at s (1..4), 0 when it is not valid UTF-8. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t k = 1; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return n;
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
			else if (f->state == SYNC_FAILED || (f->state == SYNC_PENDING && b->rc == 0))
				other = true;
		}
	}
	return verify ? 4 : conn ? 3 : other ? 1 : 0;
}
