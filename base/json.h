/* The one way bytes that may not be text enter a JSON object (cJSON). */
#ifndef BG_JSON_H
#define BG_JSON_H

#include <stddef.h>

struct cJSON;

/* Adds s[0..n) as string KEY when it is valid UTF-8 (base/utf8.h), else as
 * KEY_b64, its base64: what boxgate prints is always valid JSON and no byte
 * is lost. */
void bg_json_add_bytes(struct cJSON *obj, const char *key, const char *s, size_t n);

/* The string member KEY of obj, NULL when obj has none or it is no string
 * (borrowed). */
const char *bg_json_str(const struct cJSON *obj, const char *key);

#endif
