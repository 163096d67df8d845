/* api/selector.h - Kubernetes label and field selectors.
 *
 * gpuq-sim answers `?labelSelector=` and `?fieldSelector=` on list and watch
 * requests and evaluates PodDisruptionBudget selectors, so it needs the
 * apiserver's own parsers; kubectl sends whatever the user typed, and the
 * apiserver rejects a bad selector with 400 and the parser's message.
 *
 * Source of the rules:
 *   - label selector strings: k8s.io/apimachinery/pkg/labels/selector.go
 *     (Lexer, Parser, NewRequirement, Requirement.Matches);
 *   - label key and value syntax: IsQualifiedName and IsValidLabelValue in
 *     k8s.io/apimachinery/pkg/util/validation/validation.go, with the error
 *     wording of the releases kubectl users see ("must be no more than 63
 *     characters", "a qualified name must consist of ...");
 *   - JSON selectors: LabelSelectorAsSelector in
 *     k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go;
 *   - field selectors: ParseSelector, splitTerms, splitTerm and UnescapeValue
 *     in k8s.io/apimachinery/pkg/fields/selector.go.
 *
 * Label selector syntax (a comma-separated list; all must hold):
 *   k=v  k==v   the label k exists and equals v (v may be empty: "k=")
 *   k!=v        k is absent or differs from v
 *   k in (a,b)  k exists and is one of the values; "()" means ("")
 *   k notin (a,b)  k is absent or none of the values
 *   k           k exists;   !k   k does not exist
 *   k>3  k<3    k exists, its value parses as a base-10 int64 and compares
 * Spaces, tabs, CR and LF may surround every token. "in" and "notin" are
 * operators only after a key, so "in=in" is a valid requirement. A key is a
 * qualified name: an optional DNS-1123 subdomain prefix (lower case, <= 253)
 * and '/', then a name of <= 63 characters [A-Za-z0-9._-] that starts and
 * ends alphanumeric. A value is <= 63 such characters or empty. The empty
 * (or all-blank) selector matches everything.
 *
 * Error messages reproduce the apiserver's, e.g.
 *   unable to parse requirement: found '', expected: in, notin, =, ==, !=, gt, lt
 *   unable to parse requirement: <nil>: Invalid value: "-a": name part must ...
 * ("<nil>" is really there: apimachinery validates a parsed key against a
 * nil field path). Where Go joins several errors of one requirement as
 * "[e1, e2]", so does this module.
 *
 * Field selectors are "f=v", "f==v" or "f!=v" terms separated by commas.
 * Field names are not validated here (the server checks them against the
 * fields each resource supports, gq_fieldsel_field()); values may be empty
 * and use backslash escapes: "\\" "\," "\=" stand for \ , =, and any other
 * escape, a trailing lone backslash, or an unescaped ',' or '=' in a value
 * is an error. Blanks are not trimmed: "a = b" is field "a " and value " b",
 * exactly as in Go.
 *
 * Selectors are immutable once built and own all their strings; matching
 * only reads them and never allocates, so one selector may be matched from
 * several threads, as long as none of them frees it. Differences from Go,
 * none of which changes what matches: requirements are kept in input order
 * rather than sorted by key, and a field selector reports its first bad
 * term in input order (Go sorts the terms first).
 */
#ifndef GQ_API_SELECTOR_H
#define GQ_API_SELECTOR_H
#include <stddef.h>

#include <jansson.h>

struct gq_labelsel;
struct gq_fieldsel;

/* Parses the label selector string 's' (NUL-terminated; borrowed) into a
 * new selector stored in *out, which the caller frees with
 * gq_labelsel_free(). "" and blanks give a selector that matches
 * everything.
 * Returns 0, or GQ_EINVAL if s or out is NULL or s is not a valid selector;
 * the reason is then written to err (errlen bytes, NUL-terminated,
 * truncated if needed; err may be NULL when errlen is 0) and *out is set
 * to NULL. */
int gq_labelsel_parse(const char *s, struct gq_labelsel **out, char *err,
                      size_t errlen);

/* Builds a selector from a metav1.LabelSelector JSON object 'sel'
 * (borrowed), e.g. a PodDisruptionBudget's spec.selector:
 *   {"matchLabels": {"app": "x"},
 *    "matchExpressions": [{"key": "k", "operator": "In", "values": ["a"]}]}
 * Operators are In, NotIn, Exists and DoesNotExist (case-sensitive).
 * Following LabelSelectorAsSelector and PDB semantics:
 *   - sel NULL or a JSON null (no selector at all) matches NOTHING;
 *   - {} and selectors whose matchLabels and matchExpressions are both
 *     empty or absent match EVERYTHING.
 * Unknown members are ignored. On success *out is a new selector owned by
 * the caller (free with gq_labelsel_free()).
 * Returns 0, or GQ_EINVAL when out is NULL, sel is not an object, a member
 * has the wrong JSON type (matchLabels values must be strings), an
 * operator is unknown ("\"Foo\" is not a valid label selector operator"),
 * In/NotIn have no values, Exists/DoesNotExist have some, or a key or
 * value is invalid ("key: Invalid value: \"-a\": name part must ...");
 * the reason goes to err as for gq_labelsel_parse() and *out is NULL. */
int gq_labelsel_from_json(const json_t *sel, struct gq_labelsel **out,
                          char *err, size_t errlen);

/* Returns 1 if 'labels' satisfies every requirement of s, else 0.
 * labels is a borrowed JSON object mapping keys to string values, or NULL
 * for an object without labels; non-string members count as absent. s
 * must not be NULL. Gt/Lt compare as Go's strconv.ParseInt(v, 10, 64); a
 * label value that does not parse never matches them. */
int gq_labelsel_match(const struct gq_labelsel *s, const json_t *labels);

/* Frees s and everything it owns. NULL is a no-op. */
void gq_labelsel_free(struct gq_labelsel *s);

/* Parses the field selector string 's' (borrowed) into a new selector in
 * *out, owned by the caller (free with gq_fieldsel_free()). "" matches
 * everything; empty terms (",,") are skipped as in Go.
 * Returns 0, or GQ_EINVAL (s or out NULL, or a syntax error) with the
 * reason in err, worded as the apiserver's:
 *   invalid selector: 'a'; can't understand 'a'
 *   invalid field selector: invalid escape sequence: \x
 *   invalid field selector: unescaped character in value: '='
 * (Go prints the rune of the last one as a number, "61"; this prints the
 * character), and *out set to NULL. */
int gq_fieldsel_parse(const char *s, struct gq_fieldsel **out, char *err,
                      size_t errlen);

/* Returns how many terms s has (0 for the empty selector). */
size_t gq_fieldsel_count(const struct gq_fieldsel *s);

/* Returns the field name of term i (i < gq_fieldsel_count(s)), e.g.
 * "metadata.name", so the server can reject fields the resource does not
 * support. Borrowed; valid until gq_fieldsel_free(s). */
const char *gq_fieldsel_field(const struct gq_fieldsel *s, size_t i);

/* Returns 1 if the object matches every term of s, else 0. get(field, arg)
 * is called once per term and returns the object's value for the field as
 * a string, "" when the field is empty or absent (NULL is read as ""); the
 * string only needs to stay valid until get is called again or match
 * returns. Returns 1 without calling get when s has no terms. */
int gq_fieldsel_match(const struct gq_fieldsel *s,
                      const char *(*get)(const char *field, void *arg),
                      void *arg);

/* Frees s and everything it owns. NULL is a no-op. */
void gq_fieldsel_free(struct gq_fieldsel *s);

#endif
