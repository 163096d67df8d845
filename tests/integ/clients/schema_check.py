#!/usr/bin/python3
"""Schema check of gpuq-sim against the official Kubernetes Python client.

Reads a gpuq-sim --record file (one JSON line per answer: method, path,
status, contentType, stream, body) and deserializes every body into the
typed models of the official client (Debian python3-kubernetes, models
generated from Kubernetes' OpenAPI document) with client-side validation
on: a required field that is missing fails. On top of the client's own
checks, every value is compared with the type the model declares (str,
int, bool, datetime, dict, list, nested model): the client's deserializer
lets a wrong primitive type through, this check does not. The 22.6 models
have no enums; ENUMS below holds the API reference's values for the
string fields of the kinds served, and a value outside them fails.

Coverage: every group/version of the recorded /apis (and core v1) must
have its recorded APIResourceList, and every resource those list (the
kinds gpuq-sim serves), subresources aside, must
have had at least one object and one List deserialized; a served kind
with no model here fails the check too. Custom resources (the kinds of
the recorded CustomResourceDefinitions) have no typed model: their
metadata is read as V1ObjectMeta.

Fields the 22.6 models do not know (newer than Kubernetes 1.22) are
reported, not failed.

When the record has gpuq-sim's /openapi/v2 document (JSON), every object
of a built-in kind (objects, List items, watch events) is also checked
against its definition there, which the build generated from the 1.32
models of @kubernetes/client-node: a field the definition does not
declare, a required field that is missing and a value of the wrong JSON
type fail (metadata and its ObjectMeta included). The document itself
must have a definition, tagged with x-kubernetes-group-version-kind, for
every kind the discovery lists. Without the document (a build without
the package) these checks are skipped, and said so.

Glue, run by tests/integ/test_pyclient.c:

    /usr/bin/python3 schema_check.py RECORD
Exit 0 when every body passed, 1 otherwise (each failure on stderr).
"""
import collections
import json
import re
import sys

import kubernetes.client as kc
from kubernetes.client import models
from kubernetes.client.rest import ApiException

# Kinds whose model name is not "V1" + kind (group/version -> kind -> model).
SPECIAL = {
    ("v1", "Event"): "CoreV1Event",
    ("v1", "EventList"): "CoreV1EventList",
    ("events.k8s.io/v1", "Event"): "EventsV1Event",
    ("events.k8s.io/v1", "EventList"): "EventsV1EventList",
}
# Answers with no model in python3-kubernetes 22.6 (newer than Kubernetes
# 1.22, or not in its OpenAPI document): checked as JSON only.
NO_MODEL = {
    ("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList"),
    ("apidiscovery.k8s.io/v2beta1", "APIGroupDiscoveryList"),
    ("meta.k8s.io/v1", "Table"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
}
# The 22.6 models carry no enums (Kubernetes 1.22's OpenAPI document had
# none); these are the values the API reference gives for the string
# fields of the kinds gpuq-sim serves (the 1.32 OpenAPI "enum"s). A list
# field's items are checked one by one.
_COND = {"True", "False", "Unknown"}
_PROTO = {"TCP", "UDP", "SCTP"}
_EFFECT = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
_HOOK = {"failurePolicy": {"Ignore", "Fail"},
         "matchPolicy": {"Exact", "Equivalent"},
         "sideEffects": {"None", "NoneOnDryRun", "Some", "Unknown"}}
ENUMS = {
    ("V1PodStatus", "phase"): {"Pending", "Running", "Succeeded", "Failed",
                               "Unknown"},
    ("V1PodStatus", "qosClass"): {"Guaranteed", "Burstable", "BestEffort"},
    ("V1PodSpec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("V1PodSpec", "dnsPolicy"): {"ClusterFirst", "ClusterFirstWithHostNet",
                                 "Default", "None"},
    ("V1PodSpec", "preemptionPolicy"): {"PreemptLowerPriority", "Never"},
    ("V1Container", "imagePullPolicy"): {"Always", "Never", "IfNotPresent"},
    ("V1Container", "terminationMessagePolicy"): {"File",
                                                  "FallbackToLogsOnError"},
    ("V1ContainerPort", "protocol"): _PROTO,
    ("V1ServicePort", "protocol"): _PROTO,
    ("V1PodCondition", "status"): _COND,
    ("V1NodeCondition", "status"): _COND,
    ("V1JobCondition", "status"): _COND,
    ("V1Condition", "status"): _COND,
    ("V1CustomResourceDefinitionCondition", "status"): _COND,
    ("V1ServiceSpec", "type"): {"ClusterIP", "NodePort", "LoadBalancer",
                                "ExternalName"},
    ("V1ServiceSpec", "sessionAffinity"): {"None", "ClientIP"},
    ("V1ServiceSpec", "ipFamilyPolicy"): {"SingleStack", "PreferDualStack",
                                          "RequireDualStack"},
    ("V1ServiceSpec", "ipFamilies"): {"IPv4", "IPv6"},
    ("V1ServiceSpec", "internalTrafficPolicy"): {"Cluster", "Local"},
    ("V1ServiceSpec", "externalTrafficPolicy"): {"Cluster", "Local"},
    ("V1Taint", "effect"): _EFFECT,
    ("V1Toleration", "effect"): _EFFECT | {""},
    ("V1Toleration", "operator"): {"Exists", "Equal", ""},
    ("V1NodeAddress", "type"): {"Hostname", "InternalIP", "ExternalIP",
                                "InternalDNS", "ExternalDNS"},
    ("V1NamespaceStatus", "phase"): {"Active", "Terminating"},
    ("V1PriorityClass", "preemptionPolicy"): {"PreemptLowerPriority",
                                              "Never"},
    ("V1MutatingWebhook", "reinvocationPolicy"): {"Never", "IfNeeded"},
    ("V1RuleWithOperations", "scope"): {"*", "Cluster", "Namespaced"},
    ("V1RuleWithOperations", "operations"): {"*", "CREATE", "UPDATE",
                                             "DELETE", "CONNECT"},
    ("V1JobSpec", "completionMode"): {"NonIndexed", "Indexed"},
    ("V1CustomResourceDefinitionSpec", "scope"): {"Cluster", "Namespaced"},
    ("V1CustomResourceConversion", "strategy"): {"None", "Webhook"},
    ("CoreV1Event", "type"): {"Normal", "Warning"},
    ("EventsV1Event", "type"): {"Normal", "Warning"},
    ("V1Status", "status"): {"Success", "Failure"},
    ("V1LabelSelectorRequirement", "operator"): {"In", "NotIn", "Exists",
                                                 "DoesNotExist"},
    ("V1NodeSelectorRequirement", "operator"): {"In", "NotIn", "Exists",
                                                "DoesNotExist", "Gt", "Lt"},
}
for _k in ("V1MutatingWebhook", "V1ValidatingWebhook"):
    for _f, _v in _HOOK.items():
        ENUMS[(_k, _f)] = _v
for (_m, _f) in ENUMS:  # a misspelt entry would check nothing
    assert _f in getattr(models, _m).attribute_map.values(), (_m, _f)
# Non-Kubernetes endpoints of the sim and documents with no kind.
SKIP_PATH = re.compile(r"^/(sim/|openapi/|healthz|readyz|livez|metrics)")


def model_name(api_version, kind):
    """The typed model for apiVersion/kind, or None."""
    name = SPECIAL.get((api_version, kind))
    if name is None:
        version = api_version.split("/")[-1]
        name = version[:1].upper() + version[1:] + kind
    return name if hasattr(models, name) else None


class Checker:
    def __init__(self):
        cfg = kc.Configuration()
        cfg.client_side_validation = True
        kc.Configuration.set_default(cfg)
        self.api = kc.ApiClient(cfg)
        self.failures = []
        self.seen = collections.Counter()  # (apiVersion, kind) deserialized
        self.unknown = collections.Counter()  # "Model.field" not in 22.6
        self.served = {}  # (apiVersion, kind) -> resource name
        self.lists = {}   # (apiVersion, kind) -> list kind
        self.crd_kinds = set()
        self.group_versions = {"v1"}  # from APIGroupList (+ core)
        self.listed = set()  # groupVersions with a recorded APIResourceList
        self.null_event_times = 0  # events.k8s.io Events with eventTime null
        self.bodies = 0
        self.v2 = None  # /openapi/v2's definitions, when recorded
        self.v2_gvk = {}  # (apiVersion, kind) -> definition name
        self.v2_checked = 0  # objects checked against it

    def fail(self, where, why):
        self.failures.append("%s: %s" % (where, why))

    # -- the typed walk ------------------------------------------------
    def typecheck(self, value, typ, where):
        """Compares value with the declared openapi type; recurses."""
        if value is None:
            return
        m = re.match(r"list\[(.*)\]$", typ)
        if m:
            if not isinstance(value, list):
                self.fail(where, "want a list, got %r" % (value,))
                return
            for i, v in enumerate(value):
                self.typecheck(v, m.group(1), "%s[%d]" % (where, i))
            return
        m = re.match(r"dict\(([^,]*), (.*)\)$", typ)
        if m:
            if not isinstance(value, dict):
                self.fail(where, "want an object, got %r" % (value,))
                return
            for k, v in value.items():
                self.typecheck(v, m.group(2), "%s[%s]" % (where, k))
            return
        if typ == "str":
            ok = isinstance(value, str)
        elif typ == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif typ == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif typ == "bool":
            ok = isinstance(value, bool)
        elif typ == "datetime":
            ok = isinstance(value, str) and self.is_time(value)
        elif typ == "date":
            ok = isinstance(value, str)
        elif typ == "object":
            ok = True
        else:
            klass = getattr(models, typ)
            if not isinstance(value, dict):
                self.fail(where, "want a %s object, got %r" % (typ, value))
                return
            for key, v in value.items():
                attr = self.attr_of(klass, key)
                if attr is None:
                    self.unknown["%s.%s" % (typ, key)] += 1
                    continue
                self.typecheck(v, klass.openapi_types[attr],
                               "%s.%s" % (where, key))
                allowed = ENUMS.get((typ, key))
                for e in (v if isinstance(v, list) else [v]):
                    if allowed and e is not None and e not in allowed:
                        self.fail("%s.%s" % (where, key),
                                  "%r is not one of %s" %
                                  (e, ", ".join(sorted(allowed))))
            return
        if not ok:
            self.fail(where, "want %s, got %r" % (typ, value))

    @staticmethod
    def attr_of(klass, key):
        for attr, json_key in klass.attribute_map.items():
            if json_key == key:
                return attr
        return None

    @staticmethod
    def is_time(s):
        # RFC 3339 as the API writes it (metav1.Time, metav1.MicroTime)
        return re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?"
                        r"(Z|[+-]\d\d:\d\d)$", s) is not None

    def deserialize(self, data, typ, where):
        """The client's own deserializer (validation on), then the walk."""
        try:
            self.api._ApiClient__deserialize(data, typ)
        except (ValueError, TypeError, AttributeError,
                ApiException) as e:  # ApiException: a bad datetime
            self.fail(where, "%s: %s" % (typ, " ".join(str(e).split())))
            return False
        self.typecheck(data, typ, where)
        return True

    # -- the 1.32 definitions of /openapi/v2 ---------------------------
    def note_v2(self, doc):
        self.v2 = doc.get("definitions") or {}
        for name, d in self.v2.items():
            for e in d.get("x-kubernetes-group-version-kind") or []:
                av = (e["group"] + "/" if e["group"] else "") + e["version"]
                self.v2_gvk[(av, e["kind"])] = name

    V2_TYPES = {"string": (str,), "integer": (int,), "number": (int, float),
                "boolean": (bool,), "array": (list,), "object": (dict,)}

    def v2check(self, value, s, where, depth=0):
        """value against the v2 schema s: declared fields, required
        fields, JSON types; references followed."""
        while "$ref" in s:
            s = self.v2.get(s["$ref"].split("/")[-1])
            if s is None:
                self.fail(where, "a reference to a missing definition")
                return
        if value is None or depth > 64:
            return
        t = s.get("type")
        if t and not s.get("x-kubernetes-int-or-string"):
            ok = isinstance(value, self.V2_TYPES[t]) and \
                (t == "boolean" or not isinstance(value, bool))
            if not ok:
                self.fail(where, "1.32 definition: want %s, got %r" %
                          (t, value))
                return
        if isinstance(value, list) and "items" in s:
            for i, v in enumerate(value):
                self.v2check(v, s["items"], "%s[%d]" % (where, i), depth + 1)
        elif isinstance(value, dict) and "properties" in s:
            props = s["properties"]
            for k, v in value.items():
                if k not in props:
                    self.fail("%s.%s" % (where, k),
                              "not in the 1.32 definition")
                else:
                    self.v2check(v, props[k], "%s.%s" % (where, k),
                                 depth + 1)
            for r in s.get("required") or []:
                if r not in value:
                    self.fail("%s.%s" % (where, r), "required by the 1.32 "
                              "definition, missing")
        elif isinstance(value, dict) and \
                isinstance(s.get("additionalProperties"), dict):
            for k, v in value.items():
                self.v2check(v, s["additionalProperties"],
                             "%s[%s]" % (where, k), depth + 1)

    def check_v2(self, obj, where):
        name = self.v2_gvk.get((obj.get("apiVersion"), obj.get("kind")))
        if self.v2 is None or name is None:
            return
        self.v2check(obj, self.v2[name], where + " (" + name + ")")
        self.v2_checked += 1

    # -- one object by apiVersion/kind ---------------------------------
    def known_nulls(self, obj, av, kind):
        """kube-apiserver shows an Event written through core/v1 without
        eventTime (as kubelets write them) with "eventTime": null in
        events.k8s.io/v1, while the 1.22 schema (and so EventsV1Event)
        requires it: the client fails on a real server too. Such events
        are counted and checked with a stand-in time. Returns obj, or a
        copy with the stand-ins."""
        if av != "events.k8s.io/v1" or kind not in ("Event", "EventList"):
            return obj
        evs = obj.get("items") or [] if kind == "EventList" else [obj]
        if all(e.get("eventTime") is not None for e in evs):
            return obj
        obj = json.loads(json.dumps(obj))
        for e in (obj.get("items") or [] if kind == "EventList" else [obj]):
            if e.get("eventTime") is None:
                e["eventTime"] = "1970-01-01T00:00:00.000000Z"
                self.null_event_times += 1
        return obj

    def check_object(self, obj, where):
        if not isinstance(obj, dict):
            self.fail(where, "not an object: %r" % (obj,))
            return
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if not av or not kind:
            self.fail(where, "no apiVersion/kind")
            return
        if (av, kind) in NO_MODEL:
            return
        group = av.split("/")[0] if "/" in av else ""
        if group in self.crd_kinds:
            self.check_custom(obj, where)
            return
        name = model_name(av, kind)
        if name is None:
            self.fail(where, "no typed model for %s %s" % (av, kind))
            return
        if self.deserialize(self.known_nulls(obj, av, kind), name, where):
            self.seen[(av, kind)] += 1
        self.check_v2(obj, where)
        if kind == "CustomResourceDefinition":
            self.note_crd(obj)
        elif kind == "CustomResourceDefinitionList":
            for it in obj.get("items") or []:
                self.note_crd(it)
        elif kind == "APIResourceList":
            self.note_resources(obj)
        elif kind == "APIGroupList":
            for g in obj.get("groups") or []:
                for v in g.get("versions") or []:
                    self.group_versions.add(v.get("groupVersion"))

    def note_crd(self, crd):
        group = (crd.get("spec") or {}).get("group")
        if group:
            self.crd_kinds.add(group)

    def check_custom(self, obj, where):
        """A custom resource or its list: metadata as V1ObjectMeta (or
        V1ListMeta), items one by one."""
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if "items" in obj and kind.endswith("List"):
            self.deserialize(obj.get("metadata") or {}, "V1ListMeta",
                             where + ".metadata")
            for i, it in enumerate(obj["items"]):
                self.check_custom(it, "%s.items[%d]" % (where, i))
        else:
            self.deserialize(obj.get("metadata"), "V1ObjectMeta",
                             where + ".metadata")
            if not isinstance(obj.get("metadata"), dict):
                self.fail(where, "custom resource without metadata")
        self.seen[(av, kind)] += 1

    def note_resources(self, rl):
        gv = rl.get("groupVersion")
        self.listed.add(gv)
        for r in rl.get("resources") or []:
            if "/" in r.get("name", ""):
                continue  # a subresource: its answers are checked as seen
            self.served[(gv, r["kind"])] = r["name"]

    # -- one recorded answer -------------------------------------------
    def check_line(self, n, rec):
        where = "line %d %s %s (%s)" % (n, rec["method"], rec["path"],
                                        rec["status"])
        if SKIP_PATH.match(rec["path"]):
            return
        try:
            body = json.loads(rec["body"])
        except ValueError as e:
            self.fail(where, "body is not JSON: %s" % e)
            return
        self.bodies += 1
        path = rec["path"].rstrip("/")
        if path == "/version":  # no kind: known by its path
            self.deserialize(body, "VersionInfo", where)
            return
        if path == "/api" and rec["status"] == 200:
            # kube-apiserver's /api has kind APIVersions but no apiVersion
            if self.deserialize(body, "V1APIVersions", where):
                self.seen[("v1", "APIVersions")] += 1
            return
        if rec["stream"]:
            if not self.deserialize(body, "V1WatchEvent", where):
                return
            if body["type"] not in ("ADDED", "MODIFIED", "DELETED",
                                    "BOOKMARK", "ERROR"):
                self.fail(where, "watch event type %r" % body["type"])
            if body["type"] == "BOOKMARK":
                return  # an object of the kind with only metadata
            self.check_object(body["object"], where + " .object")
            return
        if rec["status"] >= 400 and body.get("kind") != "Status":
            self.fail(where, "an error answer that is not a Status")
        self.check_object(body, where)

    def coverage(self):
        missing = []
        # every group/version served must have been listed: its kinds
        # are what the coverage below asks for
        for gv in sorted(self.group_versions - self.listed):
            self.fail("coverage", "no APIResourceList recorded for " + gv)
        for (gv, kind), res in sorted(self.served.items()):
            list_kind = kind + "List"
            for k in (kind, list_kind):
                if not self.seen[(gv, k)]:
                    missing.append("%s %s (%s)" % (gv, k, res))
            group = gv.split("/")[0] if "/" in gv else ""
            if group not in self.crd_kinds and model_name(gv, kind) is None:
                self.fail("served kind", "%s %s has no typed model" %
                          (gv, kind))
            if group not in self.crd_kinds and self.v2 is not None:
                for k in (kind, list_kind):
                    if (gv, k) not in self.v2_gvk:
                        self.fail("/openapi/v2", "no definition tagged %s %s"
                                  % (gv, k))
        for m in missing:
            self.fail("coverage", "served kind never checked: " + m)
        if not self.served:
            self.fail("coverage", "the record has no discovery documents")


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: schema_check.py RECORD\n")
        return 2
    c = Checker()
    with open(argv[1]) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    # CRDs and the v2 document first: which groups are custom, and the
    # definitions, are known before any body is read
    for rec in lines:
        if rec["path"] == "/openapi/v2" and rec["status"] == 200:
            c.note_v2(json.loads(rec["body"]))
        if "customresourcedefinitions" in rec["path"] and not rec["stream"]:
            try:
                body = json.loads(rec["body"])
            except ValueError:
                continue
            for it in body.get("items") or [body]:
                if isinstance(it, dict) and it.get("kind") == \
                        "CustomResourceDefinition":
                    c.note_crd(it)
    for n, rec in enumerate(lines, 1):
        c.check_line(n, rec)
    c.coverage()
    kinds = sorted("%s %s: %d" % (av, k, n) for (av, k), n in c.seen.items())
    print("schema_check: %d bodies, %d kinds checked" % (c.bodies, len(kinds)))
    for k in kinds:
        print("  " + k)
    if c.v2 is None:
        print("no /openapi/v2 recorded (a build without @kubernetes/"
              "client-node): the 1.32 definitions were not checked")
    else:
        print("%d objects of built-in kinds checked against /openapi/v2 "
              "(%d definitions)" % (c.v2_checked, len(c.v2)))
    if c.null_event_times:
        print("events.k8s.io/v1 Events with eventTime null, as kube-apiserver "
              "shows core/v1 Events without it (not failures): %d" %
              c.null_event_times)
    if c.unknown:
        print("fields the 22.6 models do not know (not failures):")
        for f, n in sorted(c.unknown.items()):
            print("  %s (%d)" % (f, n))
    if c.failures:
        shown = collections.OrderedDict()
        for f in c.failures:
            key = re.sub(r"^line \d+ ", "", f)
            shown.setdefault(key, f)
        for f in list(shown.values())[:200]:
            sys.stderr.write("schema_check: FAIL %s\n" % f)
        sys.stderr.write("schema_check: %d failures (%d distinct)\n" %
                         (len(c.failures), len(shown)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
