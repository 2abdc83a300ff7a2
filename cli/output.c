/* All of boxgate's terminal output goes through here: whole lines under one
 * lock, so lines from boxes running in parallel never interleave. */
#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "cli/cli.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void vsay(const char *lead, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&out_mu);
	fputs(lead, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&out_mu);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("boxgate: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("boxgate: warning: ", fmt, ap);
	va_end(ap);
}

void cli_log_warning(void *ctx, const char *box, const char *msg)
{
	(void)ctx;
	cli_warn("%s: %s", box, msg);
}

void cli_print_line(FILE *to, const char *prefix, const char *line, size_t len)
{
	pthread_mutex_lock(&out_mu);
	if (prefix) {
		fputs(prefix, to);
		fputs(": ", to);
	}
	fwrite(line, 1, len, to);
	fputc('\n', to);
	fflush(to);
	pthread_mutex_unlock(&out_mu);
}

void cli_print_json(cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);
	pthread_mutex_lock(&out_mu);
	fputs(s, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
	free(s);
}

static bool is_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t extra;
		if (c == 0)
			return false; /* cJSON strings end at NUL */
		if (c < 0x80) extra = 0;
		else if ((c & 0xe0) == 0xc0 && c >= 0xc2) extra = 1;
		else if ((c & 0xf0) == 0xe0) extra = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4) extra = 3;
		else return false;
		for (size_t k = 1; k <= extra; k++)
			if (i + k >= n || (s[i + k] & 0xc0) != 0x80)
				return false;
		i += extra + 1;
	}
	return true;
}

void cli_json_add_bytes(cJSON *obj, const char *line, size_t len)
{
	if (is_utf8((const unsigned char *)line, len)) {
		char *z = xstrndup(line, len);
		cJSON_AddStringToObject(obj, "line", z);
		free(z);
		return;
	}
	size_t cap = 4 * ((len + 2) / 3) + 1;
	unsigned char *b = xmalloc(cap);
	EVP_EncodeBlock(b, (const unsigned char *)line, (int)len);
	cJSON_AddStringToObject(obj, "line_b64", (char *)b);
	free(b);
}
