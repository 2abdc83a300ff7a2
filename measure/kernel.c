/* The gate kind and the box's kernel path for it (measure/kernel.h). */
#include "measure/kernel.h"

#include <string.h>

const char *measure_gate_kind(char *const *v, size_t n)
{
	const char *kind = NULL;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i], "--kind") == 0 && i + 1 < n)
			kind = v[++i];
		else if (strncmp(v[i], "--kind=", 7) == 0)
			kind = v[i] + 7;
	}
	return kind;
}

const char *measure_kernel_path(const conf_box *b, const char *kind)
{
	if (!kind)
		return NULL;
	size_t kl = strlen(kind);
	for (size_t i = 0; i < b->n_kernel_paths; i++)
		if (strncmp(b->kernel_paths[i], kind, kl) == 0 && b->kernel_paths[i][kl] == ':')
			return b->kernel_paths[i] + kl + 1;
	return NULL;
}
