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


if __name__ == "__main__":
    main()
