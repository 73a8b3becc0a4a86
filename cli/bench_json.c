/*
 * Just enough JSON for the bench history (one object a line, written by
 * bench_history.c): a recursive-descent reader into a tree, and a string
 * writer.  The file is ours, but people edit files: anything that does not
 * parse is reported as such (NULL), never trusted.  Depth is bounded.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define JSON_MAX_DEPTH 16

struct reader {
	const char *p;
	int depth;
};

static void skip_space(struct reader *r)
{
	while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')
		r->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	out[0] = (char)(0xe0 | (cp >> 12));
	out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[2] = (char)(0x80 | (cp & 0x3f));
	return 3;
}

static char *read_string(struct reader *r)
{
	const char *s = r->p + 1; /* after the quote */
	size_t cap = 0;
	char *out;

	for (const char *q = s; *q != '"'; q++) {
		if (!*q || (unsigned char)*q < 0x20)
			return NULL;
		if (*q == '\\' && !*++q)
			return NULL;
		cap++;
	}
	out = malloc(cap * 3 + 1); /* \uXXXX gives at most 3 bytes */
	if (!out)
		return NULL;
	size_t n = 0;
	for (; *s != '"'; s++) {
		if (*s != '\\') {
			out[n++] = *s;
			continue;
		}
		switch (*++s) {
		case '"': out[n++] = '"'; break;
		case '\\': out[n++] = '\\'; break;
		case '/': out[n++] = '/'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'u': {
			unsigned cp = 0;
			for (int i = 1; i <= 4; i++) {
				int v = hexval(s[i]);
				if (v < 0) {
					free(out);
					return NULL;
				}
				cp = cp * 16 + (unsigned)v;
			}
			s += 4;
			if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
				cp = '?'; /* no NULs, no surrogate pairs */
			n += put_utf8(out + n, cp);
			break;
		}
		default:
			free(out);
			return NULL;
		}
	}
	out[n] = '\0';
	r->p = s + 1;
	return out;
}

static bool read_value(struct reader *r, struct json *j);

static bool read_items(struct reader *r, struct json *j, bool object)
{
	char close = object ? '}' : ']';
	size_t cap = 0;

	r->p++;
	skip_space(r);
	if (*r->p == close) {
		r->p++;
		return true;
	}
	for (;;) {
		if (j->n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct json *it = realloc(j->items, ncap * sizeof(*it));
			if (!it)
				return false;
			j->items = it;
			if (object) {
				char **k = realloc(j->keys, ncap * sizeof(*k));
				if (!k)
					return false;
				j->keys = k;
			}
			cap = ncap;
		}
		memset(&j->items[j->n], 0, sizeof(j->items[0]));
		if (object) {
			skip_space(r);
			if (*r->p != '"')
				return false;
			j->keys[j->n] = read_string(r);
			if (!j->keys[j->n])
				return false;
			skip_space(r);
			if (*r->p++ != ':') {
				free(j->keys[j->n]);
				return false;
			}
		}
		bool ok = read_value(r, &j->items[j->n]);
		j->n++; /* freed by json_free even when incomplete */
		if (!ok)
			return false;
		skip_space(r);
		if (*r->p == ',') {
			r->p++;
			continue;
		}
		if (*r->p == close) {
			r->p++;
			return true;
		}
		return false;
	}
}

static bool read_value(struct reader *r, struct json *j)
{
	skip_space(r);
	switch (*r->p) {
	case '{':
	case '[':
		if (++r->depth > JSON_MAX_DEPTH)
			return false;
		j->type = *r->p == '{' ? JSON_OBJECT : JSON_ARRAY;
		bool ok = read_items(r, j, j->type == JSON_OBJECT);
		r->depth--;
		return ok;
	case '"':
		j->type = JSON_STRING;
		j->string = read_string(r);
		return j->string != NULL;
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = {"true", "false", "null"};
		for (int i = 0; i < 3; i++)
			if (strncmp(r->p, words[i], strlen(words[i])) == 0) {
				r->p += strlen(words[i]);
				j->type = i == 2 ? JSON_NULL : JSON_BOOL;
				j->boolean = i == 0;
				return true;
			}
		return false;
	}
	default: {
		char *end;
		if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
			return false;
		j->type = JSON_NUMBER;
		j->number = strtod(r->p, &end);
		if (end == r->p)
			return false;
		r->p = end;
		return true;
	}
	}
}

static void free_inside(struct json *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free_inside(&j->items[i]);
		if (j->keys)
			free(j->keys[i]);
	}
	free(j->items);
	free(j->keys);
	free(j->string);
}

void json_free(struct json *j)
{
	if (!j)
		return;
	free_inside(j);
	free(j);
}

struct json *json_parse(const char *text)
{
	struct reader r = {.p = text};
	struct json *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	if (!read_value(&r, j)) {
		json_free(j);
		return NULL;
	}
	skip_space(&r);
	if (*r.p) {
		json_free(j);
		return NULL;
	}
	return j;
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return &obj->items[i];
	return NULL;
}

const char *json_str(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);
	return v && v->type == JSON_STRING ? v->string : "";
}

double json_num(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);
	return v && v->type == JSON_NUMBER ? v->number : -1;
}

void json_put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}
