#!/usr/bin/env python3
"""Generates src/schema/builtin.json, the type table of the built-in kinds.

The table is derived from k8s-openapi's generated sources (which are in turn
generated from Kubernetes' published OpenAPI definitions): struct fields and
their JSON names, which fields are required, scalar types, and the list/map
merge strategies (x-kubernetes-list-type, list-map-keys, map-type) that
k8s-openapi turns into its `DeepMerge` impls. What k8s-openapi drops
(struct-level `x-kubernetes-map-type: atomic`, multi-key list maps) is added
by hand in src/schema/mod.rs, next to the reason.

Usage: python3 tools/gen_schema.py [path/to/k8s-openapi/src/v1_36]
Without an argument the source is looked up in ~/.cargo/registry.
"""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "schema", "builtin.json")


def source_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = sorted(glob.glob(os.path.join(home, "registry/src/*/k8s-openapi-0.29.*/src/v1_36")))
    if not found:
        sys.exit("k8s-openapi 0.29 sources not found; pass the v1_36 directory")
    return found[-1]


SCALARS = {
    "bool": "bool",
    "i32": "int32",
    "i64": "int64",
    "f64": "number",
    "std::string::String": "string",
    "crate::ByteString": "bytes",
    "crate::serde_json::Value": "any",
    "serde_json::Value": "any",
    "crate::apimachinery::pkg::util::intstr::IntOrString": "int-or-string",
    "crate::apimachinery::pkg::api::resource::Quantity": "quantity",
    "crate::apimachinery::pkg::apis::meta::v1::Time": "time",
    "crate::apimachinery::pkg::apis::meta::v1::MicroTime": "time",
    "crate::apimachinery::pkg::runtime::RawExtension": "any",
    "crate::apimachinery::pkg::apis::meta::v1::FieldsV1": "any",
    "crate::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON": "any",
    "crate::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray": "any",
    "crate::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool": "any",
    "crate::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrStringArray": "any",
}


def type_of(rust, structs):
    rust = rust.strip()
    if rust in SCALARS:
        return SCALARS[rust]
    m = re.fullmatch(r"std::vec::Vec<(.*)>", rust)
    if m:
        return {"list": type_of(m.group(1), structs)}
    m = re.fullmatch(r"std::collections::BTreeMap<std::string::String,\s*(.*)>", rust)
    if m:
        return {"map": type_of(m.group(1), structs)}
    m = re.fullmatch(r"crate::(.*)", rust)
    if m:
        name = m.group(1)
        return name if name in structs else "any"
    return "any"


def main():
    src = source_dir()
    files = glob.glob(os.path.join(src, "**", "*.rs"), recursive=True)
    raw = {}
    kinds = {}
    for f in files:
        text = open(f, encoding="utf-8").read()
        rel = os.path.relpath(f, src)
        module = "::".join(os.path.dirname(rel).split(os.sep))
        for m in re.finditer(r"^pub struct (\w+) \{\n(.*?)^\}", text, re.S | re.M):
            name = f"{module}::{m.group(1)}"
            fields = re.findall(r"^\s+pub (\w+): (.+),$", m.group(2), re.M)
            raw[name] = (fields, text, m.group(1))
        for m in re.finditer(
            r"impl crate::Resource for (\w+) \{\s*const API_VERSION: &'static str = \"([^\"]*)\";"
            r".*?const KIND: &'static str = \"([^\"]*)\";",
            text,
            re.S,
        ):
            kinds[f"{m.group(2)}/{m.group(3)}"] = f"{module}::{m.group(1)}"
    types = {}
    for name, (fields, text, short) in raw.items():
        json_names = dict(
            (rust, js)
            for js, rust in re.findall(r'"([^"]+)" => Field::Key_(\w+),', text)
        )
        merge = {}
        dm = re.search(r"impl crate::DeepMerge for %s \{(.*?)\n\}\n" % short, text, re.S)
        body = dm.group(1) if dm else ""
        for kind, field in re.findall(r"merge_strategies::(list::atomic|list::set|map::atomic|map::granular)\(&mut self\.(\w+)", body):
            merge[field] = kind
        for field, keys in re.findall(
            r"merge_strategies::list::map\(\s*&mut self\.(\w+),\s*other\.\w+,\s*&\[(.*?)\],", body, re.S
        ):
            merge[field] = ("list::map", re.findall(r"lhs\.(\w+) ==", keys))
        out = {}
        required = []
        for rust, ty in fields:
            js = json_names.get(rust)
            if js is None:
                continue
            optional = ty.startswith("Option<") and ty.endswith(">")
            inner = ty[7:-1] if optional else ty
            t = type_of(inner, raw)
            strat = merge.get(rust)
            if isinstance(t, dict) and "list" in t:
                if isinstance(strat, tuple):
                    elem = t["list"]
                    elem_json = {}
                    if isinstance(elem, str) and elem in raw:
                        elem_json = dict(
                            (r, j)
                            for j, r in re.findall(r'"([^"]+)" => Field::Key_(\w+),', raw[elem][1])
                        )
                    t["type"] = "map"
                    t["keys"] = [elem_json.get(k, k) for k in strat[1]]
                elif strat == "list::set":
                    t["type"] = "set"
                else:
                    t["type"] = "atomic"
            if isinstance(t, dict) and "map" in t and strat == "map::atomic":
                t["atomic"] = True
            entry = {"t": t}
            if not optional:
                entry["r"] = True
            out[js] = entry
        types[name] = out
    doc = {
        "source": "k8s-openapi 0.29 (Kubernetes v1.36 definitions)",
        "kinds": dict(sorted(kinds.items())),
        "types": dict(sorted(types.items())),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"), sort_keys=False)
        fh.write("\n")
    print(f"{len(types)} types, {len(kinds)} kinds -> {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
