/* boxgate slots: the pools' first-come lines printed (cli/slots_holders.h). */
#include "cli/slots_holders.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/output.h"

/* Text from a box, shown on a terminal: controls as '?'. */
static void add_clean(strbuf *b, const char *s)
{
	for (; s && *s; s++)
		strbuf_addch(b, (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

void slots_print_lines(const cJSON *lines, bool always)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, lines)
	{
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(l, "waiters"), *x;
		int nw = cJSON_GetArraySize(w);
		strbuf b = STRBUF_INIT;
		if (bg_json_str(l, "error")) {
			strbuf_addf(&b,
				    "\nline of pool %s (on %s): not read: ", bg_json_str(l, "pool"),
				    bg_json_str(l, "box"));
			add_clean(&b, bg_json_str(l, "error"));
			strbuf_addch(&b, '\n');
		} else if (!nw && always) {
			strbuf_addf(&b, "\nline of pool %s (on %s): no one waits\n",
				    bg_json_str(l, "pool"), bg_json_str(l, "box"));
		} else if (nw) {
			strbuf_addf(
				&b,
				"\nline of pool %s (on %s): %d waiting, first come first served\n",
				bg_json_str(l, "pool"), bg_json_str(l, "box"), nw);
			cJSON_ArrayForEach(x, w)
			{
				const cJSON *pos = cJSON_GetObjectItemCaseSensitive(x, "position");
				const cJSON *t = cJSON_GetObjectItemCaseSensitive(x, "ticket");
				const cJSON *pid = cJSON_GetObjectItemCaseSensitive(x, "pid");
				const char *tag = bg_json_str(x, "tag"),
					   *since = bg_json_str(x, "since");
				strbuf_addf(&b, "%3d  ", cJSON_IsNumber(pos) ? pos->valueint : 0);
				add_clean(&b, tag && *tag ? tag : "?");
				strbuf_addstr(&b, "  since ");
				add_clean(&b, since && *since ? since : "?");
				strbuf_addf(&b, "  (ticket %.0f",
					    cJSON_IsNumber(t) ? t->valuedouble : 0);
				if (cJSON_IsNumber(pid))
					strbuf_addf(&b, ", agent pid %d", pid->valueint);
				strbuf_addch(&b, ')');
				strbuf_addch(&b, '\n');
			}
		}
		if (b.len)
			cli_write(stdout, b.buf, b.len);
		strbuf_release(&b);
	}
}

void slots_print_lines_json(const cJSON *lines)
{
	const cJSON *l, *x;
	cJSON_ArrayForEach(l, lines)
	{
		if (bg_json_str(l, "error")) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "line", bg_json_str(l, "pool"));
			cJSON_AddStringToObject(o, "box", bg_json_str(l, "box"));
			cJSON_AddStringToObject(o, "error", bg_json_str(l, "error"));
			cli_print_json(o);
			cJSON_Delete(o);
			continue;
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(l, "waiters"))
		{
			cJSON *o = cJSON_Duplicate(x, 1);
			cJSON_AddStringToObject(o, "line", bg_json_str(l, "pool"));
			cJSON_AddStringToObject(o, "box", bg_json_str(l, "box"));
			cli_print_json(o);
			cJSON_Delete(o);
		}
	}
}
