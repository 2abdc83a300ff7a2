/* Remote paths: quoted through shim_quote, with "~" kept as the remote home. */
#include "shim/shim.h"

#include <string.h>

void shim_quote_path(strbuf *out, const char *path)
{
	if (strcmp(path, "~") == 0) {
		strbuf_addstr(out, "\"$HOME\"");
		return;
	}
	if (strncmp(path, "~/", 2) == 0) {
		strbuf_addstr(out, "\"$HOME\"/");
		path += 2;
		if (!*path)
			return;
	}
	shim_quote(out, path);
}
