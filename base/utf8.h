/* UTF-8 as RFC 3629 defines it: the one decoder every module uses. */
#ifndef BG_UTF8_H
#define BG_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid UTF-8 sequence at p (p < end), 0 when there is
 * none: overlong forms, surrogates and code points above U+10FFFF are not.
 * *cp (may be NULL) gets the code point. */
size_t bg_utf8_seq(const unsigned char *p, const unsigned char *end, uint32_t *cp);

/* True when s[0..n) is valid UTF-8 without NUL: text every JSON reader takes
 * as a string. */
bool bg_utf8_valid(const char *s, size_t n);

#endif
