/* libFuzzer target for results/: the results file reader (store.c) and the push
 * manifest's "pushed" list (record.c), the two places where bytes written by another
 * process, or a crash, come back into boxgate.
 *
 * Input: one control byte, then the bytes. Control bit 0: the bytes are a results file
 * (else a manifest's text, cut at its first NUL as run reads it).
 *
 * Invariants checked:
 *   - a results file: results_read never fails on content (only on the file), counts
 *     every '\n'-ended line as a record or a bad line (blank lines aside), calls back
 *     in file order with strictly increasing line numbers, hands over only JSON
 *     objects, reports a torn last line only when the bytes do not end in '\n', and
 *     a record appended after the bytes (with a '\n' first when the last line is
 *     torn, as results_append does not do) is read back as the last record;
 *   - a manifest: every entry has a 64-hex sha256, a non-empty path without '\n'
 *     (or, when the bytes are not UTF-8, a path_b64),
 *     and a "YYYY-MM-DDTHH:MM:SS.mmmZ" time; there are never more entries than lines.
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "base/error.h"
#include "results/record.h"
#include "results/store.h"

static char dir[64], path[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_tmpdir(dir, sizeof(dir), "results");
	snprintf(path, sizeof(path), "%s/r.jsonl", dir);
	return 0;
}

typedef struct seen {
	size_t calls, last_line;
	bool marker_last; /* the last record was the one appended by the target */
} seen;

static int on_record(void *ctx, const cJSON *rec, size_t line)
{
	seen *s = ctx;
	CHECK(cJSON_IsObject(rec));
	CHECK(line > s->last_line);
	s->last_line = line;
	s->calls++;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "fuzz_marker");
	s->marker_last = cJSON_IsString(m) && strcmp(m->valuestring, "end") == 0 &&
			 cJSON_GetArraySize(rec) == 1;
	return 0;
}

static size_t lines_ended(const uint8_t *d, size_t n, size_t *blank)
{
	size_t lines = 0, start = 0;
	*blank = 0;
	for (size_t i = 0; i < n; i++) {
		if (d[i] != '\n')
			continue;
		bool only_space = true;
		for (size_t j = start; j < i; j++)
			if (d[j] != ' ' && d[j] != '\t' && d[j] != '\r')
				only_space = false;
		if (only_space)
			(*blank)++;
		lines++;
		start = i + 1;
	}
	return lines;
}

static void results_file(const uint8_t *d, size_t n)
{
	fuzz_write_file(path, d, n);
	seen s = {0};
	results_read_stats st;
	bg_err err = {0};
	CHECK(results_read(path, on_record, &s, &st, &err) == 0);
	CHECK(st.records == s.calls);
	size_t blank, ended = lines_ended(d, n, &blank);
	CHECK(st.records + st.bad <= ended + 1);
	CHECK(st.records + st.bad + blank >= ended);
	if (n == 0 || d[n - 1] == '\n')
		CHECK(!st.torn);
	CHECK((st.bad == 0) == (st.first_bad == 0));

	/* a record appended after whatever was there (the torn line closed first) is
	 * read back last */
	static const char marker[] = "{\"fuzz_marker\":\"end\"}";
	FILE *f = fopen(path, "ab");
	CHECK(f != NULL);
	if (n && d[n - 1] != '\n')
		fputc('\n', f);
	fclose(f);
	CHECK(results_append(path, marker, strlen(marker), &err) == 0);
	seen after = {0};
	CHECK(results_read(path, on_record, &after, &st, &err) == 0);
	CHECK(after.marker_last);
	CHECK(!st.torn);
	unlink(path);
}

static bool is_iso(const char *t)
{
	static const char form[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	if (strlen(t) != sizeof(form) - 1)
		return false;
	for (size_t i = 0; form[i]; i++)
		if (form[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != form[i])
			return false;
	return true;
}

static void manifest(const uint8_t *d, size_t n)
{
	char *text = malloc(n + 1);
	CHECK(text != NULL);
	memcpy(text, d, n);
	text[n] = '\0';
	size_t lines = 1;
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	cJSON *a = results_pushed_list(text);
	CHECK(cJSON_IsArray(a));
	CHECK((size_t)cJSON_GetArraySize(a) <= lines);
	const cJSON *e;
	cJSON_ArrayForEach(e, a)
	{
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(e, "sha256");
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
		const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "pushed_at");
		CHECK(cJSON_IsString(sha) && strlen(sha->valuestring) == 64 &&
		      strspn(sha->valuestring, "0123456789abcdef") == 64);
		const cJSON *p64 = cJSON_GetObjectItemCaseSensitive(e, "path_b64");
		/* a path that is not UTF-8 is kept as base64, as every record does */
		CHECK((cJSON_IsString(p) && p->valuestring[0] && !strchr(p->valuestring, '\n')) !=
		      (cJSON_IsString(p64) && p64->valuestring[0]));
		CHECK(cJSON_IsString(at) && is_iso(at->valuestring));
	}
	char *printed = cJSON_PrintUnformatted(a);
	CHECK(printed != NULL);
	cJSON *back = cJSON_Parse(printed);
	CHECK(back != NULL && cJSON_Compare(a, back, 1));
	cJSON_Delete(back);
	free(printed);
	cJSON_Delete(a);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		results_file(data + 1, size - 1);
	else
		manifest(data + 1, size - 1);
	return 0;
}
