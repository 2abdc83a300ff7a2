/* The strict JSON scanner the result contract needs before cJSON may read a
 * line: RFC 8259, one object and nothing after it but blanks, strings in
 * valid UTF-8 without \u0000, no key twice in any object, finite numbers, no
 * nesting deeper than GATE_JSON_MAX_DEPTH. */
#ifndef BG_GATE_JSON_SCAN_H
#define BG_GATE_JSON_SCAN_H

#include <stddef.h>

#define GATE_JSON_MAX_DEPTH 32

/* NULL when s[0..n) is exactly one JSON object (optionally surrounded by
 * blanks) under the strict rules above, else why not (static text, or `buf`). */
const char *gate_json_strict_check(const char *s, size_t n, char *buf, size_t bufn);

#endif
