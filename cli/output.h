/* The one writer (cli/output.c): everything boxgate prints goes through it,
 * whole writes under one lock. */
#ifndef BG_CLI_OUTPUT_H
#define BG_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "boxgate: ..." on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sync_trace_cb: BOXGATE_TRACE's phase timings on stderr, through the locked writer. */
void cli_sync_trace(void *ctx, const char *box, const char *phase);
/* The remote_log_cb that prints warnings as "boxgate: BOX: msg". */
void cli_log_warning(void *ctx, const char *box, const char *msg);

/* The one writer: everything boxgate prints goes through these, whole
 * writes under one lock, so output of boxes running in parallel never
 * interleaves. */
/* "PREFIX: LINE\n" (prefix may be NULL); the bytes of the line pass unchanged. */
void cli_print_line(FILE *to, const char *prefix, const char *line, size_t len);
/* Formatted text, written as one piece. */
void cli_printf(FILE *to, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raw bytes, written as one piece (progress displays, gathered output). */
void cli_write(FILE *to, const void *buf, size_t len);
/* One progress bar's line, "BOX: FILE  42.0% 1.0/2.4 MiB 3.1 MB/s", cut to the
 * terminal's width, appended to `screen` (a transfer of `total` bytes from
 * `start_ms` to `now_ms`, bg_now_ms clock; `rel` shown escaped). */
struct strbuf;
void cli_progress_line(struct strbuf *screen, const char *box, const char *rel, uint64_t done,
		       uint64_t total, int64_t start_ms, int64_t now_ms);
/* One JSON object (cJSON, compact) as a line on stdout. */
struct cJSON;
void cli_print_json(struct cJSON *obj);
/* Whether to colour what goes to `to`: it is a terminal and NO_COLOR is unset. */
bool cli_color(FILE *to);

#endif
