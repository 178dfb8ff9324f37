#!/usr/bin/env python3
"""Writes definitions.json: the definitions of Kubernetes' OpenAPI document that the objects of
packaging/kubernetes need (README.md beside this file says which document, from where).

    extract_definitions.py SWAGGER_JSON > definitions.json

Takes the root kinds below and every definition they reach through "$ref", as they are, and
nothing else (the whole document is 4 MiB, mostly paths and kinds nothing here uses).
"""
import json
import sys

ROOTS = [
    "io.k8s.api.core.v1.PodSpec",
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.core.v1.Secret",
    "io.k8s.api.core.v1.ConfigMap",
    "io.k8s.api.core.v1.ServiceAccount",
    "io.k8s.api.networking.v1.NetworkPolicy",
]
PREFIX = "#/definitions/"


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def closure(definitions, roots):
    seen = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for ref in refs(definitions[name]):
            if not ref.startswith(PREFIX):
                raise SystemExit(f"unexpected $ref {ref!r} in {name}")
            todo.append(ref[len(PREFIX):])
    return seen


def main():
    with open(sys.argv[1]) as f:
        document = json.load(f)
    definitions = document["definitions"]
    names = closure(definitions, ROOTS)
    out = {
        "swagger": document.get("swagger"),
        "info": document.get("info"),
        "definitions": {name: definitions[name] for name in sorted(names)},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
