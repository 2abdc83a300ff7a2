/* libFuzzer target for gate/client/result.c: the FAITHFUL_RESULT parser and judge.
 *
 * Input: one control byte, then the line's JSON body (the target puts
 * "FAITHFUL_RESULT " in front). Control bits: 0 the agent printed the line
 * (else the gate); 1 the user gave --bar; 2-7 the bar, 0.5 + n/32.
 *
 * Invariants checked:
 *   - gate_result_parse_from never crashes, leaks or reads out of bounds
 *     (ASan, UBSan), keeps the line verbatim, and gives a known verdict;
 *   - problems is printable ASCII (it reaches terminals and JSON);
 *   - r.json exists exactly when the strict check accepts the body; then
 *     cJSON's compact print of it is again strictly valid, valid UTF-8, and
 *     parses back to an equal tree (nothing the strict check let through is
 *     changed by cJSON: no duplicate key, no cut string, no lost number);
 *   - a gate line never yields TIMEOUT_HANG; a forged line is INVALID;
 *   - PASS_GATE only from a gate line stating PASS_GATE, with a candidate whose
 *     cos reaches the policy and whose spans are possible; BELOW_BAR only from a
 *     gate line;
 *   - bg_utf8_valid agrees with a byte-by-byte decode of the input.
 *
 * Build and run: `make fuzz` (every tests/fuzz/fuzz_*.c), or
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -I. -I/usr/include/cjson
 * -fsanitize=fuzzer,address,undefined \ tests/fuzz/fuzz_result.c gate/client/result.c base/strbuf.c
 * base/xmalloc.c -lcjson -lm -o build/fuzz_result build/fuzz_result -max_total_time=60
 * -max_len=4096 build/fuzz-corpus-result tests/fuzz/corpus/result */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "base/utf8.h"
#include "gate/client/result.h"

/* An independent UTF-8 check (RFC 3629 table 3-7), for bg_utf8_valid. */
static bool ref_utf8(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		uint8_t lo = 0x80, hi = 0xbf;
		size_t k;
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			k = 1;
		else if (c == 0xe0)
			k = 2, lo = 0xa0;
		else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
			k = 2;
		else if (c == 0xed)
			k = 2, hi = 0x9f;
		else if (c == 0xf0)
			k = 3, lo = 0x90;
		else if (c >= 0xf1 && c <= 0xf3)
			k = 3;
		else if (c == 0xf4)
			k = 3, hi = 0x8f;
		else
			return false;
		if (i + k >= n)
			return false;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t j = 2; j <= k; j++)
			if (s[i + j] < 0x80 || s[i + j] > 0xbf)
				return false;
		i += k + 1;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t ctl = data[0];
	const char *body = (const char *)data + 1;
	size_t blen = size - 1;
	gate_policy p = GATE_POLICY_DEFAULT;
	p.bar = ctl & 2 ? 0.5 + (double)(ctl >> 2) / 32.0 : 0; /* 0: no --bar */
	gate_source src = ctl & 1 ? GATE_FROM_AGENT : GATE_FROM_GATE;

	CHECK(bg_utf8_valid(body, blen) == ref_utf8((const uint8_t *)body, blen));

	size_t plen = strlen(RESULT_PREFIX);
	char *line = malloc(plen + blen + 1);
	memcpy(line, RESULT_PREFIX, plen);
	memcpy(line + plen, body, blen);
	line[plen + blen] = '\0';

	gate_result r;
	gate_result_parse_from(&r, line, plen + blen, &p, src);
	CHECK(r.raw && memcmp(r.raw, line, plen + blen) == 0);
	CHECK(r.verdict >= VERDICT_PASS_GATE && r.verdict <= VERDICT_INVALID);
	for (const char *c = r.problems; *c; c++)
		CHECK(*c >= 0x20 && *c < 0x7f);

	char why[160];
	bool strict = !memchr(body, '\0', blen) &&
		      gate_json_strict_check(body, blen, why, sizeof(why)) == NULL;
	CHECK((r.json != NULL) == strict);
	CHECK(r.parsed == strict);
	if (r.json) {
		char *out = cJSON_PrintUnformatted(r.json);
		CHECK(out);
		size_t on = strlen(out);
		CHECK(gate_json_strict_check(out, on, why, sizeof(why)) == NULL);
		CHECK(bg_utf8_valid(out, on));
		cJSON *back = cJSON_Parse(out);
		CHECK(back && cJSON_Compare(r.json, back, 1));
		cJSON_Delete(back);
		free(out);
	}
	if (src == GATE_FROM_GATE)
		CHECK(r.verdict != VERDICT_TIMEOUT_HANG);
	else
		CHECK(r.verdict == VERDICT_TIMEOUT_HANG || r.verdict == VERDICT_INVALID);
	if (r.forged)
		CHECK(r.verdict == VERDICT_INVALID);
	if (r.verdict == VERDICT_PASS_GATE) {
		/* The gate said so, or said BELOW_BAR against its own bar and the
		 * user's lower --bar decides. */
		CHECK(src == GATE_FROM_GATE && !r.disagrees &&
		      (r.stated == VERDICT_PASS_GATE ||
		       (p.bar > 0 && r.stated == VERDICT_BELOW_BAR)));
		CHECK(r.cand.present && r.cand.cos >= p.min_cos &&
		      r.cand.cos <= 1.0 + GATE_COS_SLACK);
		CHECK(r.cand.slowCTA_us > 0 && r.cand.slowCTA_us <= GATE_SPAN_MAX_US);
		CHECK(r.cand.wall_us > 0 && r.cand.wall_us <= GATE_SPAN_MAX_US);
		CHECK(isfinite(r.bar) && r.bar > 0);
		if (p.bar > 0)
			CHECK(r.bar == p.bar);
		CHECK((r.base.present ? r.base.slowCTA_us / r.cand.slowCTA_us : 1.0) >= r.bar);
	}
	if (r.verdict == VERDICT_BELOW_BAR)
		CHECK(src == GATE_FROM_GATE && r.parsed);
	gate_result_release(&r);
	free(line);
	return 0;
}
