/* Relative paths read lexically, and the bytes no shell reads as anything but
 * themselves: what sync/ and the gate's overlay both build remote paths from. */
#include "base/path.h"

#include <string.h>

bool bg_path_resolve(strbuf *out, const char *path)
{
	const char *s = path;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == 1 && s[0] == '.') {
			;
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			if (out->len == 0)
				return false;
			char *slash = strrchr(out->buf, '/');
			size_t keep = slash ? (size_t)(slash - out->buf) : 0;
			out->len = keep;
			out->buf[keep] = '\0';
		} else {
			if (out->len)
				strbuf_addch(out, '/');
			strbuf_add(out, s, len);
		}
		s += len;
	}
	return true;
}

int bg_path_normalize_rel(const char *in, char **out, bg_err *err)
{
	*out = NULL;
	if (!in || !*in)
		return bg_fail(err, BG_EUSAGE, "an empty path");
	if (in[0] == '/')
		return bg_fail(err, BG_EUSAGE,
			       "%s: an absolute path (targets are relative to the box's repo)", in);
	strbuf sb = STRBUF_INIT;
	if (!bg_path_resolve(&sb, in)) {
		strbuf_release(&sb);
		return bg_fail(err, BG_EUSAGE, "%s: escapes the repo ('..' above its top)", in);
	}
	if (sb.len == 0) {
		strbuf_release(&sb);
		return bg_fail(err, BG_EUSAGE, "%s: names the repo itself, not a file in it", in);
	}
	*out = strbuf_detach(&sb);
	return 0;
}

bool bg_path_safe_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

bool bg_path_safe(const char *s)
{
	if (!*s || *s == '-')
		return false;
	for (; *s; s++)
		if (*s != '/' && !bg_path_safe_byte(*s))
			return false;
	return true;
}
