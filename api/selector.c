/* api/selector.c - label and field selectors (see selector.h).
 *
 * The label selector parser is a transcription of apimachinery's
 * labels/selector.go: the same lexer (longest match over the special
 * symbols = ! ( ) , > <, identifiers up to a blank or a symbol), the same
 * recursive descent with its two contexts (after a key "in" and "notin" are
 * operators, everywhere else they are plain identifiers), and the same
 * messages, so kubectl users see the error text a real apiserver gives.
 * Go scans all tokens before parsing; scanning never fails, so lexing one
 * token ahead, as done here, accepts and rejects the same strings.
 *
 * Validation (NewRequirement, IsQualifiedName, IsValidLabelValue) writes
 * into a struct msg, which either appends to the caller's err buffer,
 * truncating silently, or, with no buffer, only counts; counting first
 * tells us whether Go would wrap several errors as "[e1, e2]".
 */
#include "api/selector.h"

#include "decide/names.h"

#include "base/alloc.h"
#include "base/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ----------------------------------------------------------- */

/* Detail strings of k8s.io/apimachinery/pkg/util/validation, built as its
 * RegexError() builds them (note the two spaces before each "or"). */
#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_ERR                                                             \
  "must consist of alphanumeric characters, '-', '_' or '.', and must "      \
  "start and end with an alphanumeric character (e.g. 'MyName',  or "        \
  "'my.name',  or '123-abc', regex used for validation is '" QNAME_FMT "')"
#define QNAME_ERR_FULL                                                        \
  "a qualified name " QNAME_ERR " with an optional DNS subdomain prefix and " \
  "'/' (e.g. 'example.com/MyName')"
#define DNS1123_FMT                                                           \
  "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
#define DNS1123_ERR                                                           \
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "  \
  "characters, '-' or '.', and must start and end with an alphanumeric "     \
  "character (e.g. 'example.com', regex used for validation is '"            \
  DNS1123_FMT "')"
#define VALUE_ERR                                                             \
  "a valid label must be an empty string or consist of alphanumeric "        \
  "characters, '-', '_' or '.', and must start and end with an "             \
  "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "    \
  "regex used for validation is '(" QNAME_FMT ")?')"

#define NAME_MAX_LEN 63
#define PREFIX_MAX_LEN 253
#define VALUE_MAX_LEN 63

struct msg {
  char *p;    /* NULL: count only */
  size_t cap; /* bytes at p, including the NUL */
  size_t len; /* bytes written, excluding the NUL */
  int items;  /* top-level errors added with msg_item() */
};

static void msg_init(struct msg *m, char *p, size_t cap)
{
  m->p = cap > 0 ? p : NULL;
  m->cap = cap;
  m->len = 0;
  m->items = 0;
  if (m->p)
    m->p[0] = '\0';
}

/* Appends printf-formatted text, truncating at the buffer's end. */
__attribute__((format(printf, 2, 3))) static void
msg_addf(struct msg *m, const char *fmt, ...)
{
  va_list ap;
  int n;

  if (!m->p || m->len + 1 >= m->cap)
    return;
  va_start(ap, fmt);
  n = vsnprintf(m->p + m->len, m->cap - m->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    m->len += (size_t)n < m->cap - m->len ? (size_t)n : m->cap - m->len - 1;
}

/* Appends s quoted as Go's %q would print it (for the ASCII that matters). */
static void msg_quote(struct msg *m, const char *s)
{
  msg_addf(m, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;

    if (c == '"' || c == '\\')
      msg_addf(m, "\\%c", c);
    else if (c == '\n')
      msg_addf(m, "\\n");
    else if (c == '\t')
      msg_addf(m, "\\t");
    else if (c == '\r')
      msg_addf(m, "\\r");
    else if (c < 0x20 || c == 0x7f)
      msg_addf(m, "\\x%02x", c);
    else
      msg_addf(m, "%c", c);
  }
  msg_addf(m, "\"");
}

/* Starts a new top-level error; Go's aggregate joins them with ", ". */
static void msg_item(struct msg *m)
{
  if (m->items++ > 0)
    msg_addf(m, ", ");
}

/* Starts a field.Invalid error for a string value: path: Invalid value: "v": */
static void msg_invalid(struct msg *m, const char *path, const char *v)
{
  msg_item(m);
  msg_addf(m, "%s: Invalid value: ", path);
  msg_quote(m, v);
  msg_addf(m, ": ");
}

/* Adds one complaint to a "; "-joined detail; *n counts them. */
static void msg_detail(struct msg *m, int *n, const char *a, const char *b)
{
  msg_addf(m, "%s%s%s", *n > 0 ? "; " : "", a, b);
  (*n)++;
}

/* Writes a formatted message to err (if any) and returns GQ_EINVAL. */
__attribute__((format(printf, 3, 4))) static int
set_err(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen > 0) {
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return GQ_EINVAL;
}

/* ---- key and value syntax ----------------------------------------------- */

static int is_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* The regex ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] on s[0..n). */
static int qname_ok(const char *s, size_t n)
{
  size_t i;

  if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
    return 0;
  for (i = 1; i + 1 < n; i++)
    if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
      return 0;
  return 1;
}

static int is_lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* The DNS-1123 subdomain regex on s[0..n): dot-separated non-empty labels
 * of [a-z0-9-] that start and end with [a-z0-9]. No per-label length limit:
 * IsDNS1123Subdomain checks only the total. */
static int dns1123_subdomain_ok(const char *s, size_t n)
{
  size_t i, start = 0;

  for (i = 0; i <= n; i++) {
    if (i < n && s[i] != '.') {
      if (!is_lower_alnum(s[i]) && s[i] != '-')
        return 0;
      continue;
    }
    if (i == start || !is_lower_alnum(s[start]) || !is_lower_alnum(s[i - 1]))
      return 0;
    start = i + 1;
  }
  return 1;
}

/* Writes IsQualifiedName's complaints about k to m, "; "-joined, and
 * returns how many there are (0: k is a valid label key). */
static int key_detail(struct msg *m, const char *k)
{
  const char *slash = strchr(k, '/');
  const char *name = slash ? slash + 1 : k;
  size_t nlen = strlen(name);
  int n = 0;

  if (slash && strchr(name, '/')) {
    msg_detail(m, &n, QNAME_ERR_FULL, "");
    return n;
  }
  if (slash && slash == k)
    msg_detail(m, &n, "prefix part ", "must be non-empty");
  if (slash && (size_t)(slash - k) > PREFIX_MAX_LEN)
    msg_detail(m, &n, "prefix part ", "must be no more than 253 characters");
  if (slash && slash > k && !dns1123_subdomain_ok(k, (size_t)(slash - k)))
    msg_detail(m, &n, "prefix part ", DNS1123_ERR);
  if (nlen == 0)
    msg_detail(m, &n, "name part ", "must be non-empty");
  else if (nlen > NAME_MAX_LEN)
    msg_detail(m, &n, "name part ", "must be no more than 63 characters");
  if (!qname_ok(name, nlen))
    msg_detail(m, &n, "name part ", QNAME_ERR);
  return n;
}

/* As key_detail() for IsValidLabelValue. */
static int value_detail(struct msg *m, const char *v)
{
  size_t len = strlen(v);
  int n = 0;

  if (len > VALUE_MAX_LEN)
    msg_detail(m, &n, "", "must be no more than 63 characters");
  if (len > 0 && !qname_ok(v, len))
    msg_detail(m, &n, "", VALUE_ERR);
  return n;
}

static int key_valid(const char *k)
{
  struct msg count;

  msg_init(&count, NULL, 0);
  return key_detail(&count, k) == 0;
}

/* ---- requirements ------------------------------------------------------- */

enum op {
  OP_NONE = 0,
  OP_EQ,    /* k=v */
  OP_DEQ,   /* k==v */
  OP_NE,    /* k!=v */
  OP_IN,    /* k in (...) */
  OP_NOTIN, /* k notin (...) */
  OP_EXISTS,
  OP_NOTEXISTS,
  OP_GT,
  OP_LT,
};

struct req {
  char *key;
  enum op op;
  char **vals;
  size_t nvals;
  size_t cap;
  int64_t num; /* the value of a Gt/Lt requirement */
};

struct gq_labelsel {
  int nothing; /* matches no object at all (absent JSON selector) */
  struct req *reqs;
  size_t n;
  size_t cap;
};

static void req_release(struct req *r)
{
  size_t i;

  for (i = 0; i < r->nvals; i++)
    free(r->vals[i]);
  free(r->vals);
  free(r->key);
  memset(r, 0, sizeof(*r));
}

static void req_push_val(struct req *r, const char *v, size_t len)
{
  if (r->nvals == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 2;
    r->vals = gq_xrealloc(r->vals, r->cap * sizeof(*r->vals));
  }
  r->vals[r->nvals++] = gq_xstrndup(v, len);
}

/* Writes Go's %#v of a []string: []string{"a", "b"}, or []string(nil). */
static void msg_string_slice(struct msg *m, const struct req *r)
{
  size_t i;

  if (r->nvals == 0) {
    msg_addf(m, "[]string(nil)");
    return;
  }
  msg_addf(m, "[]string{");
  for (i = 0; i < r->nvals; i++) {
    msg_addf(m, "%s", i > 0 ? ", " : "");
    msg_quote(m, r->vals[i]);
  }
  msg_addf(m, "}");
}

/* The operator checks of NewRequirement. Equals/NotEquals always come with
 * exactly one value here (parser and matchLabels), so Go's "exact-match
 * compatibility requires one single value" cannot occur. */
static void req_check_op(struct msg *m, struct req *r)
{
  size_t i;

  if ((r->op == OP_IN || r->op == OP_NOTIN) && r->nvals == 0) {
    msg_item(m);
    msg_addf(m, "values: Invalid value: ");
    msg_string_slice(m, r);
    msg_addf(m, ": for 'in', 'notin' operators, values set can't be empty");
  }
  if ((r->op == OP_EXISTS || r->op == OP_NOTEXISTS) && r->nvals != 0) {
    msg_item(m);
    msg_addf(m, "values: Invalid value: ");
    msg_string_slice(m, r);
    msg_addf(m, ": values set must be empty for exists and does not exist");
  }
  if (r->op != OP_GT && r->op != OP_LT)
    return;
  for (i = 0; i < r->nvals; i++) {
    char path[32];

    if (gq_parse_int64(r->vals[i], &r->num) == 0)
      continue;
    snprintf(path, sizeof(path), "values[%zu]", i);
    msg_invalid(m, path, r->vals[i]);
    msg_addf(m, "for 'Gt', 'Lt' operators, the value must be an integer");
  }
}

/* NewRequirement's checks: writes its errors to m (several are joined as
 * Go's aggregate joins them) and returns how many there were. Also sets
 * r->num for Gt/Lt. */
static int req_check(struct msg *m, struct req *r)
{
  size_t i;
  int before = m->items;

  if (!key_valid(r->key)) {
    msg_invalid(m, "key", r->key);
    key_detail(m, r->key);
  }
  req_check_op(m, r);
  for (i = 0; i < r->nvals; i++) {
    struct msg count;
    char *path;

    msg_init(&count, NULL, 0);
    if (value_detail(&count, r->vals[i]) == 0)
      continue;
    path = gq_xasprintf("values[%zu][%s]", i, r->key);
    msg_invalid(m, path, r->vals[i]);
    value_detail(m, r->vals[i]);
    free(path);
  }
  return m->items - before;
}

/* Runs req_check() and, if r is invalid, writes "<prefix><errors>" to err,
 * bracketing several errors as "[e1, e2]". Returns 0 or GQ_EINVAL. */
static int req_validate(struct req *r, const char *prefix, char *err,
                        size_t errlen)
{
  struct msg m;
  int n;

  msg_init(&m, NULL, 0);
  n = req_check(&m, r);
  if (n == 0)
    return 0;
  msg_init(&m, err, errlen);
  msg_addf(&m, "%s%s", prefix, n > 1 ? "[" : "");
  req_check(&m, r);
  msg_addf(&m, "%s", n > 1 ? "]" : "");
  return GQ_EINVAL;
}

static struct gq_labelsel *sel_new(void)
{
  return gq_xcalloc(1, sizeof(struct gq_labelsel));
}

/* Moves *r into s (r is left empty). */
static void sel_take_req(struct gq_labelsel *s, struct req *r)
{
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->reqs = gq_xrealloc(s->reqs, s->cap * sizeof(*s->reqs));
  }
  s->reqs[s->n++] = *r;
  memset(r, 0, sizeof(*r));
}

void gq_labelsel_free(struct gq_labelsel *s)
{
  size_t i;

  if (!s)
    return;
  for (i = 0; i < s->n; i++)
    req_release(&s->reqs[i]);
  free(s->reqs);
  free(s);
}

/* ---- label selector lexer ----------------------------------------------- */

enum tok {
  T_EOS = 1,
  T_CLOSEPAR,
  T_COMMA,
  T_NOT, /* "!", DoesNotExistToken */
  T_DEQ,
  T_EQ,
  T_GT,
  T_ID,
  T_IN,
  T_LT,
  T_NE,
  T_NOTIN,
  T_OPENPAR,
};

struct token {
  enum tok t;
  const char *lit; /* into the input; "" for T_EOS */
  int len;
};

/* Lexing contexts: in VALUES, "in" and "notin" are identifiers. */
enum ctx { CTX_KEY_AND_OP, CTX_VALUES };

struct parser {
  const char *s;
  size_t pos;       /* where the next token starts */
  struct token cur; /* the lookahead token */
  char *err;
  size_t errlen;
};

static int is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_special(char c)
{
  return c != '\0' && strchr("=!(),><", c) != NULL;
}

/* string2token for the symbols; 0 if s[0..n) is not one. */
static enum tok symbol_token(const char *s, size_t n)
{
  static const struct {
    const char *s;
    enum tok t;
  } syms[] = {{")", T_CLOSEPAR}, {",", T_COMMA}, {"!", T_NOT},
              {"==", T_DEQ},     {"=", T_EQ},    {">", T_GT},
              {"<", T_LT},       {"!=", T_NE},   {"(", T_OPENPAR}};
  size_t i;

  for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
    if (strlen(syms[i].s) == n && memcmp(syms[i].s, s, n) == 0)
      return syms[i].t;
  return (enum tok)0;
}

/* scanSpecialSymbol: the longest run of symbols that is still a token.
 * Every single symbol is a token, so this never fails. */
static struct token lex_symbol(struct parser *p)
{
  const char *start = p->s + p->pos;
  struct token tk = {T_EOS, start, 0};
  size_t n;

  for (n = 1; is_special(start[n - 1]); n++) {
    enum tok t = symbol_token(start, n);

    if (!t)
      break;
    tk.t = t;
    tk.len = (int)n;
  }
  p->pos += (size_t)tk.len;
  return tk;
}

/* scanIDOrKeyword: everything up to a blank, a symbol or the end. */
static struct token lex_word(struct parser *p)
{
  const char *start = p->s + p->pos;
  struct token tk = {T_ID, start, 0};

  while (start[tk.len] && !is_special(start[tk.len]) &&
         !is_blank(start[tk.len]))
    tk.len++;
  p->pos += (size_t)tk.len;
  if (tk.len == 2 && memcmp(start, "in", 2) == 0)
    tk.t = T_IN;
  else if (tk.len == 5 && memcmp(start, "notin", 5) == 0)
    tk.t = T_NOTIN;
  return tk;
}

static void lex_next(struct parser *p)
{
  while (is_blank(p->s[p->pos]))
    p->pos++;
  if (p->s[p->pos] == '\0')
    p->cur = (struct token){T_EOS, "", 0};
  else if (is_special(p->s[p->pos]))
    p->cur = lex_symbol(p);
  else
    p->cur = lex_word(p);
}

static struct token lookahead(const struct parser *p, enum ctx ctx)
{
  struct token tk = p->cur;

  if (ctx == CTX_VALUES && (tk.t == T_IN || tk.t == T_NOTIN))
    tk.t = T_ID;
  return tk;
}

static struct token consume(struct parser *p, enum ctx ctx)
{
  struct token tk = lookahead(p, ctx);

  lex_next(p);
  return tk;
}

/* ---- label selector parser ---------------------------------------------- */

#define REQ_PREFIX "unable to parse requirement: "

static int found(struct parser *p, struct token tk, const char *expected)
{
  return set_err(p->err, p->errlen, REQ_PREFIX "found '%.*s'%s", tk.len,
                 tk.lit, expected);
}

/* parseKeyAndInferOperator: [!] KEY, validating KEY; a key followed by ','
 * or the end is Exists (or DoesNotExist after '!'). */
static int parse_key(struct parser *p, struct req *r)
{
  struct token tk = consume(p, CTX_VALUES);
  struct msg m;

  if (tk.t == T_NOT) {
    r->op = OP_NOTEXISTS;
    tk = consume(p, CTX_VALUES);
  }
  if (tk.t != T_ID)
    return found(p, tk, ", expected: identifier");
  r->key = gq_xstrndup(tk.lit, (size_t)tk.len);
  if (!key_valid(r->key)) {
    /* Go validates against a nil field path, which prints as "<nil>". */
    msg_init(&m, p->err, p->errlen);
    msg_addf(&m, REQ_PREFIX);
    msg_invalid(&m, "<nil>", r->key);
    key_detail(&m, r->key);
    return GQ_EINVAL;
  }
  tk = lookahead(p, CTX_VALUES);
  if ((tk.t == T_EOS || tk.t == T_COMMA) && r->op != OP_NOTEXISTS)
    r->op = OP_EXISTS;
  return 0;
}

static int parse_operator(struct parser *p, struct req *r)
{
  struct token tk = consume(p, CTX_KEY_AND_OP);

  switch (tk.t) {
  case T_IN: r->op = OP_IN; break;
  case T_NOTIN: r->op = OP_NOTIN; break;
  case T_EQ: r->op = OP_EQ; break;
  case T_DEQ: r->op = OP_DEQ; break;
  case T_NE: r->op = OP_NE; break;
  case T_GT: r->op = OP_GT; break;
  case T_LT: r->op = OP_LT; break;
  default:
    return found(p, tk, ", expected: in, notin, =, ==, !=, gt, lt");
  }
  return 0;
}

/* parseIdentifiersList: values and empty values between '(' and ')';
 * leaves the ')' as the lookahead. "(,", ",)" and ",," add "". */
static int parse_value_list(struct parser *p, struct req *r)
{
  for (;;) {
    struct token tk = consume(p, CTX_VALUES);
    struct token next = lookahead(p, CTX_VALUES);

    if (tk.t == T_ID) {
      req_push_val(r, tk.lit, (size_t)tk.len);
      if (next.t == T_CLOSEPAR)
        return 0;
      if (next.t != T_COMMA)
        return found(p, next, ", expected: ',' or ')'");
    } else if (tk.t == T_COMMA) {
      if (r->nvals == 0 || next.t == T_CLOSEPAR || next.t == T_COMMA)
        req_push_val(r, "", 0);
      if (next.t == T_CLOSEPAR)
        return 0;
    } else {
      return found(p, tk, ", expected: ',', or identifier");
    }
  }
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Go keeps the values in a sets.String and passes its sorted List() on,
 * which decides the index in "values[i][k]" errors: sort and dedupe. */
static void sort_unique_vals(struct req *r)
{
  size_t i, n = 0;

  qsort(r->vals, r->nvals, sizeof(*r->vals), cmp_str);
  for (i = 0; i < r->nvals; i++) {
    if (n > 0 && strcmp(r->vals[n - 1], r->vals[i]) == 0)
      free(r->vals[i]);
    else
      r->vals[n++] = r->vals[i];
  }
  r->nvals = n;
}

/* parseValues: "(" list ")"; "()" is the single value "". */
static int parse_values(struct parser *p, struct req *r)
{
  struct token tk = consume(p, CTX_VALUES);
  int rc;

  if (tk.t != T_OPENPAR)
    return found(p, tk, " expected: '('");
  tk = lookahead(p, CTX_VALUES);
  if (tk.t == T_CLOSEPAR) {
    consume(p, CTX_VALUES);
    req_push_val(r, "", 0);
    return 0;
  }
  if (tk.t != T_ID && tk.t != T_COMMA)
    return found(p, tk, ", expected: ',', ')' or identifier");
  rc = parse_value_list(p, r);
  if (rc == 0)
    consume(p, CTX_VALUES); /* the ')' parse_value_list() stopped at */
  sort_unique_vals(r);
  return rc;
}

/* parseExactValue: one identifier, or "" when the requirement ends. */
static int parse_exact_value(struct parser *p, struct req *r)
{
  struct token tk = lookahead(p, CTX_VALUES);

  if (tk.t == T_EOS || tk.t == T_COMMA) {
    req_push_val(r, "", 0);
    return 0;
  }
  tk = consume(p, CTX_VALUES);
  if (tk.t != T_ID)
    return found(p, tk, ", expected: identifier");
  req_push_val(r, tk.lit, (size_t)tk.len);
  return 0;
}

/* parseRequirement plus NewRequirement; on success r is added to s. */
static int parse_requirement(struct parser *p, struct gq_labelsel *s)
{
  struct req r;
  int rc;

  memset(&r, 0, sizeof(r));
  rc = parse_key(p, &r);
  if (rc == 0 && r.op != OP_EXISTS && r.op != OP_NOTEXISTS) {
    rc = parse_operator(p, &r);
    if (rc == 0 && (r.op == OP_IN || r.op == OP_NOTIN))
      rc = parse_values(p, &r);
    else if (rc == 0)
      rc = parse_exact_value(p, &r);
  }
  if (rc == 0)
    rc = req_validate(&r, REQ_PREFIX, p->err, p->errlen);
  if (rc == 0)
    sel_take_req(s, &r);
  req_release(&r);
  return rc;
}

/* The top level of Parser.parse(): requirements separated by commas. */
static int parse_selector(struct parser *p, struct gq_labelsel *s)
{
  for (;;) {
    struct token tk = lookahead(p, CTX_VALUES);

    if (tk.t == T_EOS)
      return 0;
    if (tk.t != T_ID && tk.t != T_NOT)
      return set_err(p->err, p->errlen,
                     "found '%.*s', expected: !, identifier, or 'end of "
                     "string'", tk.len, tk.lit);
    if (parse_requirement(p, s) != 0)
      return GQ_EINVAL;
    tk = consume(p, CTX_VALUES);
    if (tk.t == T_EOS)
      return 0;
    if (tk.t != T_COMMA)
      return set_err(p->err, p->errlen,
                     "found '%.*s', expected: ',' or 'end of string'", tk.len,
                     tk.lit);
    tk = lookahead(p, CTX_VALUES);
    if (tk.t != T_ID && tk.t != T_NOT)
      return set_err(p->err, p->errlen,
                     "found '%.*s', expected: identifier after ','", tk.len,
                     tk.lit);
  }
}

int gq_labelsel_parse(const char *s, struct gq_labelsel **out, char *err,
                      size_t errlen)
{
  struct parser p;
  struct gq_labelsel *sel;

  if (err && errlen > 0)
    err[0] = '\0';
  if (!out)
    return set_err(err, errlen, "no output selector");
  *out = NULL;
  if (!s)
    return set_err(err, errlen, "no selector string");
  memset(&p, 0, sizeof(p));
  p.s = s;
  p.err = err;
  p.errlen = errlen;
  lex_next(&p);
  sel = sel_new();
  if (parse_selector(&p, sel) != 0) {
    gq_labelsel_free(sel);
    return GQ_EINVAL;
  }
  *out = sel;
  return 0;
}

/* ---- metav1.LabelSelector ----------------------------------------------- */

/* matchLabels: each k: v is the requirement k=v (Equals). */
static int add_match_labels(struct gq_labelsel *s, const json_t *ml,
                            char *err, size_t errlen)
{
  const char *k;
  json_t *v;
  int rc;

  if (!ml || json_is_null(ml))
    return 0;
  if (!json_is_object(ml))
    return set_err(err, errlen, "matchLabels: must be an object");
  json_object_foreach((json_t *)ml, k, v) {
    struct req r;

    if (!json_is_string(v))
      return set_err(err, errlen, "matchLabels[%s]: must be a string", k);
    memset(&r, 0, sizeof(r));
    r.key = gq_xstrdup(k);
    r.op = OP_EQ;
    req_push_val(&r, json_string_value(v), json_string_length(v));
    rc = req_validate(&r, "", err, errlen);
    if (rc == 0)
      sel_take_req(s, &r);
    req_release(&r);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Maps a LabelSelectorOperator; OP_NONE if unknown. */
static enum op json_op(const char *op)
{
  if (strcmp(op, "In") == 0)
    return OP_IN;
  if (strcmp(op, "NotIn") == 0)
    return OP_NOTIN;
  if (strcmp(op, "Exists") == 0)
    return OP_EXISTS;
  if (strcmp(op, "DoesNotExist") == 0)
    return OP_NOTEXISTS;
  return OP_NONE;
}

/* Reads member 'name' of e as a string: absent or null is "" (Go's zero
 * value); any other type is an error (NULL). */
static const char *json_str_member(const json_t *e, const char *name)
{
  const json_t *v = json_object_get(e, name);

  if (!v || json_is_null(v))
    return "";
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Fills r from one matchExpressions element (index i, for messages). */
static int read_expression(struct req *r, const json_t *e, size_t i,
                           char *err, size_t errlen)
{
  const char *key = json_str_member(e, "key");
  const char *op = json_str_member(e, "operator");
  const json_t *vals = json_object_get(e, "values"), *v;
  size_t j;

  if (!key || !op)
    return set_err(err, errlen, "matchExpressions[%zu].%s: must be a string",
                   i, key ? "operator" : "key");
  r->op = json_op(op);
  if (r->op == OP_NONE)
    return set_err(err, errlen, "\"%s\" is not a valid label selector operator",
                   op);
  r->key = gq_xstrdup(key);
  if (vals && !json_is_null(vals) && !json_is_array(vals))
    return set_err(err, errlen, "matchExpressions[%zu].values: must be an "
                   "array of strings", i);
  json_array_foreach(vals, j, v) {
    if (!json_is_string(v))
      return set_err(err, errlen, "matchExpressions[%zu].values[%zu]: must "
                     "be a string", i, j);
    req_push_val(r, json_string_value(v), json_string_length(v));
  }
  return 0;
}

static int add_match_expressions(struct gq_labelsel *s, const json_t *me,
                                 char *err, size_t errlen)
{
  const json_t *e;
  size_t i;

  if (!me || json_is_null(me))
    return 0;
  if (!json_is_array(me))
    return set_err(err, errlen, "matchExpressions: must be an array");
  json_array_foreach(me, i, e) {
    struct req r;
    int rc;

    memset(&r, 0, sizeof(r));
    if (!json_is_object(e))
      rc = set_err(err, errlen, "matchExpressions[%zu]: must be an object", i);
    else
      rc = read_expression(&r, e, i, err, errlen);
    if (rc == 0)
      rc = req_validate(&r, "", err, errlen);
    if (rc == 0)
      sel_take_req(s, &r);
    req_release(&r);
    if (rc != 0)
      return rc;
  }
  return 0;
}

int gq_labelsel_from_json(const json_t *sel, struct gq_labelsel **out,
                          char *err, size_t errlen)
{
  struct gq_labelsel *s;

  if (err && errlen > 0)
    err[0] = '\0';
  if (!out)
    return set_err(err, errlen, "no output selector");
  *out = NULL;
  s = sel_new();
  /* LabelSelectorAsSelector: a nil selector is labels.Nothing(). */
  if (!sel || json_is_null(sel)) {
    s->nothing = 1;
    *out = s;
    return 0;
  }
  if (!json_is_object(sel)) {
    gq_labelsel_free(s);
    return set_err(err, errlen, "selector: must be an object");
  }
  if (add_match_labels(s, json_object_get(sel, "matchLabels"), err,
                       errlen) != 0 ||
      add_match_expressions(s, json_object_get(sel, "matchExpressions"), err,
                            errlen) != 0) {
    gq_labelsel_free(s);
    return GQ_EINVAL;
  }
  *out = s;
  return 0;
}

/* ---- label matching ----------------------------------------------------- */

static int has_value(const struct req *r, const char *v)
{
  size_t i;

  for (i = 0; i < r->nvals; i++)
    if (strcmp(r->vals[i], v) == 0)
      return 1;
  return 0;
}

/* Requirement.Matches; v is the label's value, NULL if absent. */
static int req_match(const struct req *r, const char *v)
{
  int64_t n;

  switch (r->op) {
  case OP_EQ:
  case OP_DEQ:
  case OP_IN:
    return v && has_value(r, v);
  case OP_NE:
  case OP_NOTIN:
    return !v || !has_value(r, v);
  case OP_EXISTS:
    return v != NULL;
  case OP_NOTEXISTS:
    return v == NULL;
  case OP_GT:
  case OP_LT:
    if (!v || gq_parse_int64(v, &n) != 0)
      return 0;
    return r->op == OP_GT ? n > r->num : n < r->num;
  default:
    return 0;
  }
}

int gq_labelsel_match(const struct gq_labelsel *s, const json_t *labels)
{
  size_t i;

  if (s->nothing)
    return 0;
  for (i = 0; i < s->n; i++) {
    const json_t *v = json_is_object(labels)
                          ? json_object_get(labels, s->reqs[i].key)
                          : NULL;

    if (!req_match(&s->reqs[i], json_is_string(v) ? json_string_value(v)
                                                   : NULL))
      return 0;
  }
  return 1;
}

/* ---- field selectors ---------------------------------------------------- */

struct fterm {
  char *field;
  char *value; /* unescaped */
  int negate;  /* "!=" */
};

struct gq_fieldsel {
  struct fterm *terms;
  size_t n;
  size_t cap;
};

void gq_fieldsel_free(struct gq_fieldsel *s)
{
  size_t i;

  if (!s)
    return;
  for (i = 0; i < s->n; i++) {
    free(s->terms[i].field);
    free(s->terms[i].value);
  }
  free(s->terms);
  free(s);
}

/* UnescapeValue: "\\" "\," "\=" are \ , =; other escapes, a trailing '\'
 * and bare ',' or '=' are errors. Returns a new string or NULL (err set). */
static char *unescape_value(const char *v, size_t len, char *err,
                            size_t errlen)
{
  char *out = gq_xmalloc(len + 1);
  size_t i, n = 0;

  for (i = 0; i < len; i++) {
    char c = v[i];

    if (c == '\\' && i + 1 < len && strchr("\\,=", v[i + 1])) {
      c = v[++i];
    } else if (c == '\\') {
      set_err(err, errlen, "invalid field selector: invalid escape "
              "sequence: \\%.*s", i + 1 < len ? 1 : 0, v + i + 1);
      free(out);
      return NULL;
    } else if (c == ',' || c == '=') {
      set_err(err, errlen, "invalid field selector: unescaped character in "
              "value: '%c'", c);
      free(out);
      return NULL;
    }
    out[n++] = c;
  }
  out[n] = '\0';
  return out;
}

/* splitTerm: the first "!=", "==" or "=" (tried in that order at each
 * position) splits lhs from rhs; no escaping on the left. Returns the
 * operator's offset and sets *oplen, or -1 if there is none. */
static long split_term(const char *t, size_t len, size_t *oplen)
{
  size_t i;

  for (i = 0; i < len; i++) {
    if (i + 1 < len && (t[i] == '!' || t[i] == '=') && t[i + 1] == '=') {
      *oplen = 2;
      return (long)i;
    }
    if (t[i] == '=') {
      *oplen = 1;
      return (long)i;
    }
  }
  return -1;
}

/* Parses the term t[0..len) of selector 'all' into s. */
static int add_term(struct gq_fieldsel *s, const char *all, const char *t,
                    size_t len, char *err, size_t errlen)
{
  size_t oplen = 0;
  long at = split_term(t, len, &oplen);
  char *value;
  struct fterm *ft;

  if (at < 0)
    return set_err(err, errlen, "invalid selector: '%s'; can't understand "
                   "'%.*s'", all, (int)len, t);
  value = unescape_value(t + at + oplen, len - (size_t)at - oplen, err,
                         errlen);
  if (!value)
    return GQ_EINVAL;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->terms = gq_xrealloc(s->terms, s->cap * sizeof(*s->terms));
  }
  ft = &s->terms[s->n++];
  ft->field = gq_xstrndup(t, (size_t)at);
  ft->value = value;
  ft->negate = t[at] == '!';
  return 0;
}

/* Length of the term starting at t: up to the first ',' that is not
 * escaped (splitTerms; the backslash stays in the term). */
static size_t term_len(const char *t)
{
  size_t i;

  for (i = 0; t[i] && t[i] != ','; i++)
    if (t[i] == '\\' && t[i + 1])
      i++;
  return i;
}

int gq_fieldsel_parse(const char *s, struct gq_fieldsel **out, char *err,
                      size_t errlen)
{
  struct gq_fieldsel *fs;
  const char *t;

  if (err && errlen > 0)
    err[0] = '\0';
  if (!out)
    return set_err(err, errlen, "no output selector");
  *out = NULL;
  if (!s)
    return set_err(err, errlen, "no selector string");
  fs = gq_xcalloc(1, sizeof(*fs));
  for (t = s; *t; t++) {
    size_t len = term_len(t);

    if (len > 0 && add_term(fs, s, t, len, err, errlen) != 0) {
      gq_fieldsel_free(fs);
      return GQ_EINVAL;
    }
    t += len;
    if (*t == '\0')
      break;
  }
  *out = fs;
  return 0;
}

size_t gq_fieldsel_count(const struct gq_fieldsel *s)
{
  return s ? s->n : 0;
}

const char *gq_fieldsel_field(const struct gq_fieldsel *s, size_t i)
{
  return s && i < s->n ? s->terms[i].field : NULL;
}

int gq_fieldsel_match(const struct gq_fieldsel *s,
                      const char *(*get)(const char *field, void *arg),
                      void *arg)
{
  size_t i;

  for (i = 0; i < s->n; i++) {
    const char *v = get(s->terms[i].field, arg);
    int eq = strcmp(v ? v : "", s->terms[i].value) == 0;

    if (eq == s->terms[i].negate)
      return 0;
  }
  return 1;
}
