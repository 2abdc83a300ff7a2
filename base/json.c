#include "base/json.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include "base/utf8.h"
#include "base/xmalloc.h"

void bg_json_add_bytes(cJSON *obj, const char *key, const char *s, size_t n)
{
	if (bg_utf8_valid(s, n)) {
		char *z = xstrndup(s, n);
		cJSON_AddStringToObject(obj, key, z);
		free(z);
		return;
	}
	unsigned char *b = xmalloc(4 * ((n + 2) / 3) + 1);
	char *k = xasprintf("%s_b64", key);
	EVP_EncodeBlock(b, (const unsigned char *)s, (int)n);
	cJSON_AddStringToObject(obj, k, (char *)b);
	free(k);
	free(b);
}

const char *bg_json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}
