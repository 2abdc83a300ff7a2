/* All of boxgate's terminal output goes through here, progress display
 * included: each write whole under one lock, so lines from boxes running in
 * parallel never interleave. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "cli/output.h"

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

void cli_printf(FILE *to, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&out_mu);
	vfprintf(to, fmt, ap);
	fflush(to);
	pthread_mutex_unlock(&out_mu);
	va_end(ap);
}

void cli_write(FILE *to, const void *buf, size_t len)
{
	pthread_mutex_lock(&out_mu);
	fwrite(buf, 1, len, to);
	fflush(to);
	pthread_mutex_unlock(&out_mu);
}

bool cli_color(FILE *to)
{
	return isatty(fileno(to)) && !getenv("NO_COLOR");
}
