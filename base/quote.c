/* The one shell-quoting function: every remote command line boxgate builds
 * goes through bg_quote(). The target is any POSIX shell (sh, dash, bash,
 * interactive or not), in any word position, in any locale.
 *
 * A word is written bare only when no shell could read it differently:
 *   - every byte is in [A-Za-z0-9_@%+=:,./-] (no glob, no tilde, no comment,
 *     no expansion, no blank, nothing beyond ASCII);
 *   - it does not start with `%` (a job spec in command position) or `=`;
 *   - the part before its first `=`, if any, is not a shell name, since
 *     `NAME=value` in command position is an assignment, not a word;
 *   - it is not a reserved word (`if`, `time`, `coproc`, ...), which would
 *     change the meaning of a command-position word.
 * Everything else is single-quoted, the only quoting in which every byte but
 * NUL (and `'` itself) is literal: `'` becomes `'\''`. */
#include "base/quote.h"

#include <string.h>

static bool bare_byte(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("_@%+=:,./-", c) != NULL;
}

static bool name_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_byte(unsigned char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

bool bg_env_name_ok(const char *name)
{
	if (!name || !name_start((unsigned char)name[0]))
		return false;
	for (const char *p = name + 1; *p; p++)
		if (!name_byte((unsigned char)*p))
			return false;
	return true;
}

/* Reserved words of POSIX sh plus bash's (`function`, `select`, `time`,
 * `coproc`); the non-letter ones (`!`, `{`, `[[`) are not bare bytes. */
static bool reserved(const char *w)
{
	static const char *const words[] = {"case",   "coproc", "do",   "done",     "elif", "else",
					    "esac",   "fi",     "for",  "function", "if",   "in",
					    "select", "then",   "time", "until",    "while"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(w, words[i]) == 0)
			return true;
	return false;
}

static bool bare_ok(const char *w)
{
	if (w[0] == '\0' || w[0] == '%' || w[0] == '=')
		return false;
	const char *eq = NULL;
	for (const char *p = w; *p; p++) {
		if (!bare_byte((unsigned char)*p))
			return false;
		if (*p == '=' && !eq)
			eq = p;
	}
	if (eq) {
		/* `NAME=...`: an assignment in command position. */
		const char *p = w;
		if (name_start((unsigned char)*p)) {
			while (p < eq && name_byte((unsigned char)*p))
				p++;
			if (p == eq)
				return false;
		}
	}
	return !reserved(w);
}

void bg_quote(strbuf *out, const char *word)
{
	if (bare_ok(word)) {
		strbuf_addstr(out, word);
		return;
	}
	strbuf_addch(out, '\'');
	for (const char *p = word; *p; p++) {
		if (*p == '\'')
			strbuf_add(out, "'\\''", 4);
		else
			strbuf_addch(out, *p);
	}
	strbuf_addch(out, '\'');
}

void bg_quote_argv(strbuf *out, const char *const *argv, size_t argc)
{
	for (size_t i = 0; i < argc; i++) {
		if (i)
			strbuf_addch(out, ' ');
		bg_quote(out, argv[i]);
	}
}

/* "~" stays the remote user's home: the shell expands "$HOME", not a quoted ~. */
void bg_quote_path(strbuf *out, const char *path)
{
	if (strcmp(path, "~") == 0) {
		strbuf_addstr(out, "\"$HOME\"");
		return;
	}
	if (strncmp(path, "~/", 2) == 0) {
		strbuf_addstr(out, "\"$HOME\"/");
		path += 2;
		if (!*path)
			return;
	}
	bg_quote(out, path);
}
