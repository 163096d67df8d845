/* decide/names.h - Kubernetes' name and value syntax, and its integer
 * parsing, written once (k8s.io/apimachinery/pkg/util/validation and Go's
 * strconv). Pure predicates over bytes: no allocation, no messages (the
 * callers word their own errors). */
#ifndef GQ_DECIDE_NAMES_H
#define GQ_DECIDE_NAMES_H
#include <stddef.h>
#include <stdint.h>

/* IsValidLabelValue, and the name part of IsQualifiedName: at most 63
 * bytes of [A-Za-z0-9_.-], starting and ending alphanumeric; the empty
 * string only when allow_empty. p[0..n) need not be NUL-terminated. */
int gq_name_part_ok(const char *p, size_t n, int allow_empty);

/* IsDNS1123Label: 1..63 bytes of [a-z0-9-], starting and ending
 * alphanumeric. */
int gq_dns_label_ok(const char *p, size_t n);

/* IsDNS1123Subdomain: 1..253 bytes of lower-case labels joined by '.',
 * each starting and ending alphanumeric. */
int gq_dns_subdomain_ok(const char *p, size_t n);

/* IsQualifiedName (label keys, resource names): [DNS-1123 subdomain '/']
 * name part. s is NUL-terminated. */
int gq_qualified_name_ok(const char *s);

/* Go's strconv.ParseInt(s, 10, 64): optional sign, at least one digit,
 * nothing else (no blanks, no '_'), in range. Returns 0 and sets *out, or
 * -1 (out unchanged). */
int gq_parse_int64(const char *s, int64_t *out);

/* Go's strconv.ParseBool, as kube-apiserver parses boolean query
 * parameters (watch, allowWatchBookmarks, sendInitialEvents, pretty):
 * 1 t T TRUE true True are true, 0 f F FALSE false False are false.
 * Returns 0 and sets *out, or -1 for anything else (out unchanged). */
int gq_parse_bool(const char *s, int *out);

#endif
