/* ClusterShell-style node sets: "b200-[1-8,12]", "h[01-03]" (zero padding
 * kept), "r[1-2]n[1-2]" (several groups, the leftmost varies slowest),
 * "a,b[1-2]" (commas outside brackets separate items), "n[1-9/2]" (a step),
 * and clush's operators between sets outside brackets: "h[1-8]!h3" (minus),
 * "h[1-4]&h[3-6]" (intersection), "h[1-4]^h[3-6]" (symmetric difference),
 * applied left to right with equal precedence as clush does:
 * "h[1-8]!h[2-3],x1" is (h[1-8] minus h[2-3]) plus x1.
 * Used to select boxes; it knows nothing of the configuration. */
#ifndef BG_CONF_NODESET_H
#define BG_CONF_NODESET_H

#include <stddef.h>

#include "base/error.h"

/* At most this many names from one expansion (a typo such as [1-1000000]
 * is an error, not an allocation storm). */
#define NODESET_MAX 65536

/* Expands `spec` in order (a union keeps duplicates; '!' removes every copy). *out is an owned
 * array of owned strings, free it with nodeset_free(); empty items are skipped. Malformed input is
 * BG_EUSAGE with the reason in err. */
int nodeset_expand(const char *spec, char ***out, size_t *n_out, bg_err *err);
void nodeset_free(char **v, size_t n);

/* Splits at commas outside brackets, trimming blanks: "a[1,2], b" gives
 * "a[1,2]" and "b". Same ownership as nodeset_expand(). */
void nodeset_split(const char *spec, char ***out, size_t *n_out);

/* How a term joins what the terms before it made. */
typedef enum nodeset_op {
	NODESET_UNION = ',',
	NODESET_MINUS = '!',
	NODESET_AND = '&',
	NODESET_XOR = '^'
} nodeset_op;
#define NODESET_OPS ",!&^"

/* From p, the end of the item that ends at a character of `stops` outside
 * brackets (or at the string's end), which is returned; [*b, *e) is the
 * item with its blanks trimmed. nodeset_split and nodeset_terms both cut
 * their items with it. */
const char *nodeset_scan_item(const char *p, const char *stops, const char **b, const char **e);

/* One operand of an expression and the operator before it (the first's is
 * NODESET_UNION); `text` is the operand as written, trimmed ("h[2-3]", "@p"). */
typedef struct nodeset_term {
	nodeset_op op;
	char *text;
} nodeset_term;

/* Splits `spec` at the operators outside brackets, left to right. Empty
 * comma items are skipped; an operator with nothing before it or after it
 * is BG_EUSAGE ("'!' needs a node set after it in 'h[1-8]!'"). *out is
 * owned: nodeset_terms_free(). */
int nodeset_terms(const char *spec, nodeset_term **out, size_t *n_out, bg_err *err);
void nodeset_terms_free(nodeset_term *t, size_t n);

/* Expands one operand (no operator outside brackets) in order. */
int nodeset_expand_one(const char *operand, char ***out, size_t *n_out, bg_err *err);

#endif
