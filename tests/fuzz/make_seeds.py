#!/usr/bin/env python3
"""Regenerates the seed corpora of tests/fuzz/corpus from the tree.

Run from the repository root: python3 tests/fuzz/make_seeds.py. Seeds come
from tests/fixtures, examples/, crds/ and clusters/ (YAML converted to JSON
where the decoder takes JSON) plus a few hand-written inputs. Files a fuzz
run found (crash-*, regression seeds) are kept: only gen-* files are
rewritten.
"""
import glob
import json
import os
import struct

import yaml

OUT = "tests/fuzz/corpus"


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "gen-" + name), "wb") as f:
        f.write(data)


def docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def ndjson_objects(path):
    with open(path) as f:
        return [json.loads(l)["object"] for l in f if l.strip()]


def base(p):
    return os.path.splitext(os.path.basename(p))[0]


def main():
    for d in glob.glob(OUT + "/*/gen-*"):
        os.remove(d)
    yamls = sorted(glob.glob("examples/*.yaml") + glob.glob("crds/*.yaml") +
                   glob.glob("clusters/*.yaml") +
                   glob.glob("tests/fixtures/invalid/*.yaml"))
    for p in yamls:
        with open(p, "rb") as f:
            put("yaml", base(p) + ".yaml", f.read())
        for i, d in enumerate(docs(p)):
            kind = d.get("kind") if isinstance(d, dict) else None
            tgt = {"GpuJob": "gpujob", "TeamQuota": "teamquota"}.get(kind)
            if tgt:
                put(tgt, "%s-%d.json" % (base(p), i), json.dumps(d))
            if kind == "CustomResourceDefinition":
                for v in d["spec"]["versions"]:
                    for c in v.get("additionalPrinterColumns", []):
                        put("jsonpath", "%s-%s" % (base(p), c["name"]),
                            c["jsonPath"] + "\n{}")
    for i, o in enumerate(ndjson_objects("tests/fixtures/watch/gpujobs.ndjson")):
        put("gpujob", "watch-%d.json" % i, json.dumps(o))
    for i, o in enumerate(ndjson_objects("tests/fixtures/watch/pods.ndjson")):
        if o.get("kind") == "Pod":
            put("pod", "watch-%d.json" % i, json.dumps(o))
    for p in glob.glob("tests/fixtures/nodes/*.json"):
        with open(p, "rb") as f:
            put("node", base(p) + ".json", f.read())
    for p in glob.glob("tests/fixtures/watch/*.ndjson"):
        with open(p, "rb") as f:
            put("watch", base(p), b"\x07" + f.read())
    for p in (glob.glob("tests/fixtures/kubeconfig/*.yaml") +
              glob.glob("tests/fixtures/kubeconfig/merge/*.yaml")):
        with open(p, "rb") as f:
            put("kubeconfig", base(p), f.read())

    sim_request_seeds(yamls)
    priorityclass_seeds()

    for i, q in enumerate(["1", "500m", "2Gi", "80G", "1.5", "0.1", "1e3",
                           "100Ei", "-4", "9223372036854775807", "1n",
                           "12Ki", "1E", "0.000001", "+3"]):
        put("quantity", str(i), q)
    for i, s in enumerate(["app=x", "app!=x,tier", "!tier",
                           "tier in (10, 20)", "tier notin (a)", "tier>5",
                           "gpuq.dev/team=research", "",
                           '{"matchLabels":{"app":"x"},"matchExpressions":'
                           '[{"key":"tier","operator":"In","values":["10"]}]}']):
        put("labelsel", str(i), s)
    for i, s in enumerate(["metadata.name=x", "status.phase!=Running",
                           "spec.nodeName==n1,metadata.namespace=a",
                           "a=\\,b", ",,", ""]):
        put("fieldsel", str(i), s)
    job = json.loads(open(glob.glob(OUT + "/gpujob/gen-gpujob-eval*")[0]).read())
    pairs = {
        "merge": [job, {"metadata": {"labels": {"a": None, "b": "c"}},
                        "spec": {"replicas": 2}}],
        "strategic": [job, {"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": "x"}, {"$patch": "delete",
                                             "name": "side"}]}}},
            "$setElementOrder/finalizers": []}],
        "json": [job, [{"op": "add", "path": "/metadata/labels/x",
                        "value": "y"},
                       {"op": "test", "path": "/kind", "value": "GpuJob"},
                       {"op": "move", "from": "/spec", "path": "/s"},
                       {"op": "remove", "path": "/s/replicas"},
                       {"op": "copy", "from": "/kind", "path": "/k"},
                       {"op": "replace", "path": "/k", "value": 1}]],
    }
    for k, v in pairs.items():
        put("patch_" + k, "job", json.dumps(v))
        put("patch_" + k, "scalar", json.dumps([1, {"a": None}]))
    put("jsonpath", "labels", ".metadata.labels['kubernetes.io/hostname']\n" +
        json.dumps({"metadata": {"labels": {"kubernetes.io/hostname": "n"}}}))
    put("jsonpath", "index", "{.spec.containers[0].image}\n" +
        json.dumps({"spec": {"containers": [{"image": "i"}]}}))
    for i, ms in enumerate([0, 119999, 330000, 63072000000, -2000, -1999,
                            2**63 - 1, -2**63, 86400000 * 3 + 7]):
        put("duration", str(i), struct.pack("<q", ms))
    resp = {
        "ledger-ok": "*3\r\n:7\r\n*2\r\n$4\r\na100\r\n$1\r\n4\r\n*0\r\n",
        "result-pair": "*2\r\n$2\r\nok\r\n:3\r\n",
        "result-int": ":9\r\n",
        "scan": "*2\r\n$2\r\n17\r\n*2\r\n$2\r\nk1\r\n$2\r\nk2\r\n",
        "hash": "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$-1\r\n",
        "error": "-ERR boom\r\n+OK\r\n",
        "nested": "*1\r\n*1\r\n*1\r\n*1\r\n*0\r\n",
    }
    for k, v in resp.items():
        put("redis_reply", k, v)
    status = {
        "notfound": (404, {"kind": "Status", "apiVersion": "v1",
                           "status": "Failure", "reason": "NotFound",
                           "message": "gpujobs.gpuq.dev \"x\" not found",
                           "code": 404}),
        "toomany": (429, {"kind": "Status", "status": "Failure",
                          "reason": "TooManyRequests",
                          "details": {"retryAfterSeconds": 3}, "code": 429}),
        "gone": (410, {"kind": "Status", "reason": "Expired", "code": 410}),
    }
    for k, (code, body) in status.items():
        put("status", k, struct.pack(">H", code - 100) + json.dumps(body).encode())
    put("status", "html", struct.pack(">H", 402) + b"<html>bad gateway</html>")
    put("status", "retry-date", struct.pack(">H", 403) +
        b"Sun, 06 Nov 1994 08:49:37 GMT")


PCS = {
    "urgent": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": "urgent"}, "value": 100},
    "default": {"metadata": {"name": "batch-default"}, "value": 0,
                "globalDefault": True, "preemptionPolicy": "Never",
                "description": "the default for batch jobs"},
    "system": {"metadata": {"name": "system-node-critical"},
               "value": 2000001000},
    "too-high": {"metadata": {"name": "greedy"}, "value": 1000000001},
    "int32-min": {"metadata": {"name": "low"}, "value": -2147483648},
    "beyond-int32": {"metadata": {"name": "low"}, "value": 2147483648},
    "string-value": {"metadata": {"name": "s"}, "value": "100"},
    "no-value": {"metadata": {"name": "none"}},
    "bad-policy": {"metadata": {"name": "p"}, "value": 1,
                   "preemptionPolicy": "Always"},
}


def priorityclass_seeds():
    for k, v in PCS.items():
        put("priorityclass", k + ".json", json.dumps(v))


def sim_request_seeds(yamls):
    """METHOD PATH?QUERY, newline, Content-Type, newline, body."""
    def req(name, line, body="", ctype=""):
        put("sim_request", name, "%s\n%s\n%s" % (line, ctype, body))

    n = 0
    for p in yamls:
        for d in docs(p):
            kind = d.get("kind") if isinstance(d, dict) else None
            if kind == "GpuJob":
                ns = d["metadata"].get("namespace", "default")
                req("%s-%d" % (base(p), n), "POST /apis/gpuq.dev/v1alpha1/"
                    "namespaces/%s/gpujobs?fieldValidation=Strict" % ns,
                    json.dumps(d))
            elif kind == "TeamQuota":
                req("%s-%d" % (base(p), n),
                    "PUT /apis/gpuq.dev/v1alpha1/teamquotas/%s" %
                    d["metadata"]["name"], json.dumps(d))
            n += 1
    for p in sorted(glob.glob("tests/fixtures/nodes/*.json")):
        with open(p) as f:
            req("node-" + base(p), "PUT /api/v1/nodes/n1/status", f.read())
    req("list-selectors", "GET /api/v1/pods?labelSelector=app%3Dx%2Ctier+in"
        "+%28a%2Cb%29&fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase!%3D"
        "Running&limit=2&continue=default%2Fa")
    req("watch", "GET /api/v1/namespaces/ml/pods?watch=true&resourceVersion"
        "=5&timeoutSeconds=10&allowWatchBookmarks=True")
    req("watch-events", "GET /apis/events.k8s.io/v1/events?watch=1&"
        "fieldSelector=regarding.name%3Dx")
    req("bad-bool", "GET /api/v1/nodes?watch=maybe")
    req("bad-limit", "GET /api/v1/nodes?limit=ten")
    req("limit-range", "GET /api/v1/nodes?limit=99999999999999999999")
    req("bad-field", "GET /api/v1/nodes?fieldSelector=spec.x%3D1")
    req("pod-yaml", "POST /api/v1/namespaces/ml/pods",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
        "  containers:\n  - name: c\n    image: i\n    resources:\n"
        "      limits:\n        nvidia.com/gpu: 8\n", "application/yaml")
    req("eviction", "POST /api/v1/namespaces/ml/pods/p/eviction",
        json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": "p", "namespace": "ml"}}))
    req("namespace-status", "PUT /api/v1/namespaces/ml/status",
        json.dumps({"metadata": {"name": "ml"}}))
    req("protobuf", "POST /api/v1/namespaces", "k8s\x00\n\x0f\n\x02v1"
        "\x12\tNamespace\x12\x08\n\x06\n\x04team", "application/"
        "vnd.kubernetes.protobuf")
    for k, v in PCS.items():
        req("pc-" + k, "POST /apis/scheduling.k8s.io/v1/priorityclasses",
            json.dumps(v))
    req("webhook", "POST /apis/admissionregistration.k8s.io/v1/"
        "validatingwebhookconfigurations", json.dumps({
            "metadata": {"name": "w"}, "webhooks": [{
                "name": "w.gpuq.dev", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "timeoutSeconds": 40,
                "clientConfig": {"url": "https://x"}}]}))


if __name__ == "__main__":
    main()
