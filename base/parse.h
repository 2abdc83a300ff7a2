/* Strict parsing of numbers a user types: the whole string or nothing. */
#ifndef BG_PARSE_H
#define BG_PARSE_H

#include <stdbool.h>

/* A whole number of seconds in [min, max]: decimal digits only (no sign,
 * blank, fraction, unit or trailing byte), no overflow. False otherwise,
 * *out untouched. */
bool bg_parse_seconds(const char *s, long min, long max, long *out);

#define BG_MAX_GPUS 1024

/* A GPU list as users write it ("3", "0,1", "0-7", "0-3, 6"; blanks around
 * numbers and separators allowed) into set[BG_MAX_GPUS]. False with *why
 * (static text) on a malformed or empty list. */
bool bg_gpus_parse(const char *s, bool *set, const char **why);

#endif
