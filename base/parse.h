/* Strict parsing of numbers a user types: the whole string or nothing. */
#ifndef BG_PARSE_H
#define BG_PARSE_H

#include <stdbool.h>

/* A whole number of seconds in [min, max]: decimal digits only (no sign,
 * blank, fraction, unit or trailing byte), no overflow. False otherwise,
 * *out untouched. */
bool bg_parse_seconds(const char *s, long min, long max, long *out);

#endif
