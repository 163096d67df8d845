/* decide/match.h - Kubernetes' own rules for matching a pod to a node.
 *
 * DESIGN §3: taints and tolerations, node selectors and required node
 * affinity, and resource fit are written once, here, and used both by
 * gpuq's capacity model and by gpuq-sim's scheduler and kubelets. gpuq's
 * placement policy (which node, gangs, quota) is not here: this module only
 * answers "may this pod run on this node, and if not, why". gpuq-sim links
 * gq_decide for these rules and the typed model only; tests/lint/layers.sh
 * fails if sim/ includes a policy header of decide/ (place, assign,
 * forecast, preempt, snapshot, quota, position).
 *
 * Each function follows one piece of Kubernetes and names it:
 *   - toleration vs taint: Toleration.ToleratesTaint,
 *     k8s.io/api/core/v1/toleration.go;
 *   - untolerated taints: FindMatchingUntoleratedTaint,
 *     pkg/apis/core/v1/helper/helpers.go, as the TaintToleration filter
 *     (pkg/scheduler/framework/plugins/tainttoleration) calls it;
 *   - nodeSelector and required node affinity: GetRequiredNodeAffinity and
 *     LazyErrorNodeSelector in
 *     k8s.io/component-helpers/scheduling/corev1/nodeaffinity, with label
 *     requirements from labels.NewRequirement / Requirement.Matches
 *     (k8s.io/apimachinery/pkg/labels/selector.go);
 *   - resource fit: fitsRequest in
 *     pkg/scheduler/framework/plugins/noderesources/fit.go, which the
 *     kubelet's admission (pkg/kubelet/lifecycle/predicate.go) runs too;
 *   - the scheduler's filter order and messages: the NodeUnschedulable,
 *     TaintToleration and NodeAffinity plugins.
 *
 * Pure: no I/O, no clock, no global state. Only struct gq_node_usage
 * allocates (its extended-resource list). All pointers are borrowed for the
 * call unless a comment says otherwise. Safe to call from any thread as
 * long as the arguments are not modified meanwhile.
 */
#ifndef GQ_DECIDE_MATCH_H
#define GQ_DECIDE_MATCH_H
#include <stddef.h>
#include <stdint.h>

#include "decide/node.h"
#include "decide/pod.h"

/* The taint a cordoned node carries (v1.TaintNodeUnschedulable). */
#define GQ_TAINT_UNSCHEDULABLE "node.kubernetes.io/unschedulable"

/* Returns 1 if toleration t tolerates taint, else 0. Rule (ToleratesTaint,
 * k8s.io/api/core/v1/toleration.go): an empty t->effect matches every
 * effect, otherwise the effects must be equal; an empty t->key matches
 * every key, otherwise the keys must be equal; then Exists tolerates any
 * value and Equal (also the decoder's default for an absent operator)
 * requires t->value == taint->value, where "" equals only "". NULL strings
 * count as "". Both pointers must be non-NULL. */
int gq_toleration_tolerates(const struct gq_toleration *t,
                            const struct gq_taint *taint);

/* Returns the first taint of n, in spec.taints order, that blocks pod s:
 * effect NoSchedule or NoExecute (only NoExecute when noexecute_only is
 * nonzero, the kubelet's eviction view), and tolerated by none of
 * s->tolerations. PreferNoSchedule never blocks. Returns NULL if no taint
 * blocks. The result is borrowed from n.
 * Rule: FindMatchingUntoleratedTaint (pkg/apis/core/v1/helper/helpers.go)
 * with DoNotScheduleTaintsFilterFunc, as the TaintToleration filter plugin
 * uses it. */
const struct gq_taint *gq_untolerated_taint(const struct gq_podsched *s,
                                            const struct gq_node *n,
                                            int noexecute_only);

/* Returns 1 if node n satisfies both s->node_selector and s's required
 * node affinity, else 0 (GetRequiredNodeAffinity(...).Match,
 * k8s.io/component-helpers/scheduling/corev1/nodeaffinity):
 *   - spec.nodeSelector: every key is a label of n with an equal value;
 *   - affinity: s->n_terms == 0 means no constraint; otherwise at least one
 *     term must match (terms are ORed). A term with neither
 *     matchExpressions nor matchFields matches nothing ("a null or empty
 *     node selector term matches no objects").
 *   - within a term every requirement must hold (ANDed). A requirement
 *     that labels.NewRequirement would reject makes its whole term fail:
 *     a key that is not a qualified name, a value that is not a valid
 *     label value (so Gt "-1" never matches), In/NotIn without values,
 *     Exists/DoesNotExist with values, Gt/Lt without exactly one value
 *     that parses as a base-10 int64.
 *   - matchExpressions on labels: In (label present, value listed), NotIn
 *     (absent, or value not listed), Exists, DoesNotExist, Gt/Lt (present,
 *     and both the label value and the requirement's value parse as Go's
 *     strconv.ParseInt(v, 10, 64); otherwise no match).
 *   - matchFields: only key metadata.name with In or NotIn and exactly one
 *     value is valid (nodeSelectorRequirementsAsFieldSelector and the
 *     apiserver's ValidateNodeFieldSelectorRequirement); any other key or
 *     operator makes the term fail. */
int gq_node_selector_matches(const struct gq_podsched *s,
                             const struct gq_node *n);

/* The requests of the pods bound to one node, summed (the scheduler's
 * NodeInfo.Requested and its pod count). Extended resources are kept by
 * name; each name is a copy owned by the usage. Initialize with
 * gq_node_usage_init(), free with gq_node_usage_release(). */
struct gq_node_usage {
  int64_t cpu_milli;
  int64_t memory_bytes;
  int64_t pods;       /* number of pods added */
  struct gq_res *ext; /* owned array; each name owned (gq_xstrdup) */
  size_t n_ext, cap_ext;
};

/* Makes u empty: all sums 0, no extended resources. Allocates nothing. */
void gq_node_usage_init(struct gq_node_usage *u);

/* Adds (sign +1) or removes (sign -1) the effective requests of s and one
 * pod slot. Removing what was added restores every sum exactly; an entry
 * that drops to 0 stays in the list with value 0. Resource names are
 * copied, so s may be released afterwards. Grows u->ext with gq_xrealloc
 * (aborts on OOM, like every gq_x allocation). sign must be +1 or -1. */
void gq_node_usage_add(struct gq_node_usage *u, const struct gq_podsched *s,
                       int sign);

/* Frees what u owns; u is then empty (as after gq_node_usage_init()). */
void gq_node_usage_release(struct gq_node_usage *u);

/* Returns the used amount of 'resource': "cpu" in millicores, "memory" in
 * bytes, "pods" as the pod count, any other name from the extended list
 * (0 if never added). */
int64_t gq_node_usage_get(const struct gq_node_usage *u, const char *resource);

/* Checks whether pod s fits on node n given what the node's pods already
 * use (used may be NULL for an empty node). Rule: fitsRequest in
 * pkg/scheduler/framework/plugins/noderesources/fit.go, which the kubelet's
 * admission also runs, in its order:
 *   1. pods: used->pods + 1 <= n->pods;
 *   2. cpu, 3. memory: when the pod requests some, used + request <=
 *      allocatable;
 *   4. every extended resource (a name with a '/', e.g. nvidia.com/gpu,
 *      nvidia.com/mig-1g.10gb) s requests with a value > 0: used + request
 *      <= gq_node_allocatable(n, name); a resource the node does not have
 *      is allocatable 0.
 * Names without a '/' other than cpu and memory (ephemeral-storage,
 * hugepages-*) are not checked: struct gq_node does not keep them.
 * Returns NULL if the pod fits. Otherwise returns the name of the first
 * resource that does not fit: the static strings "pods", "cpu", "memory",
 * or the extended resource's name borrowed from s (valid as long as s).
 * why (whylen bytes, may be NULL when whylen is 0) then receives the
 * scheduler's reason with the amounts, truncated to fit, e.g.
 *   Insufficient nvidia.com/gpu (requested 8, free 4 of 8)
 *   Insufficient cpu (requested 4000m, free 3920m of 3920m)
 *   Too many pods (requested 1, free 0 of 110)
 * where free = allocatable - used, shown as 0 when negative. On success why
 * is set to "". */
const char *gq_fit_check(const struct gq_node *n,
                         const struct gq_node_usage *used,
                         const struct gq_podsched *s, char *why, size_t whylen);

/* Writes the kubelet's admission rejection reason for 'resource' into buf
 * (len bytes, NUL-terminated, truncated if needed; nothing written when len
 * is 0): "OutOf" + resource, e.g. OutOfnvidia.com/gpu, OutOfcpu, OutOfpods
 * (fmt.Sprintf("OutOf%s", ResourceName), pkg/kubelet/lifecycle/
 * predicate.go). */
void gq_fit_reason(const char *resource, char *buf, size_t len);

/* Runs the scheduler's non-resource filters for pod s on node n, in order,
 * and returns NULL if all pass, else a static short reason; why (whylen
 * bytes, may be NULL when whylen is 0) gets kube-scheduler's message:
 *   "NotReady"      node(s) were not ready
 *       (condition Ready is not True. Kubernetes expresses this as the
 *       node.kubernetes.io/not-ready taint; DESIGN §3 makes Ready a hard
 *       requirement, with the wording of the former CheckNodeCondition
 *       predicate);
 *   "Unschedulable" node(s) were unschedulable
 *       (spec.unschedulable, unless a toleration tolerates the taint
 *       node.kubernetes.io/unschedulable:NoSchedule; NodeUnschedulable
 *       plugin);
 *   "Taint"         node(s) had untolerated taint {<key>: <value>}
 *       (gq_untolerated_taint(s, n, 0); TaintToleration plugin);
 *   "NodeAffinity"  node(s) didn't match Pod's node affinity/selector
 *       (gq_node_selector_matches(); NodeAffinity plugin).
 * Resources are checked separately, by gq_fit_check(). On success why is
 * set to "". */
const char *gq_node_eligible(const struct gq_node *n,
                             const struct gq_podsched *s, char *why,
                             size_t whylen);

#endif
