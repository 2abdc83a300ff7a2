/* Strict parsing of numbers a user types: the whole string or nothing. */
#ifndef BG_PARSE_H
#define BG_PARSE_H

#include <stdbool.h>

/* A whole number of seconds in [min, max]: decimal digits only (no sign,
 * blank, fraction, unit or trailing byte), no overflow. False otherwise,
 * *out untouched. */
bool bg_parse_seconds(const char *s, long min, long max, long *out);
/* Seconds with an optional fraction of up to three digits ("2", "0.5",
 * "1.25") as milliseconds in [min_ms, max_ms]. Digits on both sides of the
 * point ("1." and ".5" are refused), no sign, exponent, blank, unit, nan or
 * inf. False otherwise, *out_ms untouched. */
bool bg_parse_seconds_ms(const char *s, long long min_ms, long long max_ms, long long *out_ms);

#define BG_MAX_GPUS 1024

/* A GPU list as users write it ("3", "0,1", "0-7", "0-3, 6"; blanks around
 * numbers and separators allowed) into set[BG_MAX_GPUS]. False with *why
 * (static text) on a malformed or empty list. */
bool bg_gpus_parse(const char *s, bool *set, const char **why);

#endif
