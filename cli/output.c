/* All of boxgate's terminal output goes through here, progress display
 * included: each write whole under one lock, so lines from boxes running in
 * parallel never interleave. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/output.h"
#include "sync/report.h"

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

static int term_cols(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		return ws.ws_col;
	return 80;
}

void cli_progress_line(strbuf *screen, const char *box, const char *rel, uint64_t done,
		       uint64_t total, int64_t start_ms, int64_t now_ms)
{
	double pct = total ? 100.0 * (double)done / (double)total : 100.0;
	double secs = (double)(now_ms - start_ms) / 1000.0;
	double rate = secs > 0.05 ? (double)done / secs / 1e6 : 0;
	char *shown = sync_path_display(rel);
	char line[512];
	snprintf(line, sizeof(line), "%s: %s %5.1f%% %.1f/%.1f MiB %.1f MB/s", box, shown, pct,
		 (double)done / 1048576.0, (double)total / 1048576.0, rate);
	free(shown);
	strbuf_addf(screen, "%.*s\n", term_cols() - 1, line);
}
