"""Hypothesis strategies for requests to an HTTP API, read from its OpenAPI document (the subset FastAPI writes:
``$ref``, ``anyOf``, ``enum``, objects, arrays, strings, numbers, booleans, null).

Each value is drawn either from its schema (within and just past its bounds: a length or a number one beyond
the limit) or as any JSON value at all, so requests range from valid to malformed; whole bodies are
sometimes replaced by arbitrary JSON or bytes. ``requests(openapi)`` draws ``Request``s over every operation;
``check_response`` validates a 2xx JSON body against the schema the document publishes for that operation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st
from jsonschema import Draft202012Validator

JSON_LEAF = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False) | st.text(max_size=40)
ANY_JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
TEXT = st.text(max_size=60) | st.sampled_from(["What is EPPO?", "federated learning", "", " ", "\x00", "[1]",
                                                "'; DROP TABLE papers; --", "<script>alert(1)</script>",
                                                "doi:10.0/none", "../../etc/passwd", "x" * 2100])


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    template: str = ""  # the operation's path as the document writes it ("/v1/papers/{paper_id}")

    def __repr__(self) -> str:  # what Hypothesis prints for a failing example
        return f"{self.method} {self.path} query={self.query} body={self.body[:300] if self.body else None!r}"


def _resolve(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = doc["components"]["schemas"][name]
    return schema


def from_schema(schema: dict[str, Any], doc: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values for ``schema``: mostly of its shape (bounds probed just past), now and then any JSON."""
    schema = _resolve(schema, doc)
    if depth > 4:
        return JSON_LEAF
    return st.one_of(_shaped(schema, doc, depth), _shaped(schema, doc, depth), _shaped(schema, doc, depth), ANY_JSON)


def _shaped(schema: dict[str, Any], doc: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([from_schema(s, doc, depth + 1) for s in schema.get("anyOf") or schema["oneOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | TEXT
    kind = schema.get("type")
    if kind == "string":
        longest = schema.get("maxLength")
        return TEXT if longest is None else TEXT | st.text(min_size=longest, max_size=longest + 1)
    if kind in ("integer", "number"):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        probes = [int(v) + d for v in (lo, hi) if v is not None for d in (-1, 0, 1)]
        wide = st.integers(-(10**6), 10**6) if kind == "integer" else st.floats(allow_nan=False)
        return wide | st.sampled_from(probes) if probes else wide
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema.get("items", {}), doc, depth + 1)
        return st.lists(items, max_size=min(int(schema.get("maxItems", 4)), 4) + 1)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = {k: from_schema(v, doc, depth + 1) for k, v in props.items() if k in required}
        optional = {k: from_schema(v, doc, depth + 1) for k, v in props.items() if k not in required}
        return st.fixed_dictionaries(fixed, optional=optional)
    return ANY_JSON


def _query_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _operation(path: str, method: str, op: dict[str, Any], doc: dict[str, Any]) -> st.SearchStrategy[Request]:
    params = op.get("parameters", [])
    in_path = {p["name"]: from_schema(p.get("schema", {}), doc) for p in params if p["in"] == "path"}
    in_query = {p["name"]: from_schema(p.get("schema", {}), doc) for p in params if p["in"] == "query"}
    body_schema = (op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema"))
    body: st.SearchStrategy[bytes | None] = st.none()
    if body_schema is not None:
        as_json = from_schema(body_schema, doc).map(lambda v: json.dumps(v).encode())
        body = as_json | as_json | ANY_JSON.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=200)

    @st.composite
    def draw(d: st.DrawFn) -> Request:
        filled = path
        for name, strategy in in_path.items():
            filled = filled.replace("{" + name + "}", quote(_query_value(d(strategy)) or "x", safe=""))
        query = {k: _query_value(v) for k, v in d(st.fixed_dictionaries({}, optional=in_query)).items()
                 if v is not None}
        return Request(method.upper(), filled, query, d(body), template=path)

    return draw()


def requests(doc: dict[str, Any]) -> st.SearchStrategy[Request]:
    """Requests over every operation of the OpenAPI document ``doc``."""
    ops = [_operation(path, method, op, doc) for path, item in sorted(doc["paths"].items())
           for method, op in sorted(item.items()) if method in ("get", "post", "put", "patch", "delete")]
    return st.one_of(ops)


def response_schema(doc: dict[str, Any], req: Request, status: int, media: str = "application/json") -> dict[str, Any]:
    """The schema ``doc`` publishes for ``req``'s operation answering ``status`` (KeyError: none published)."""
    op = doc["paths"][req.template][req.method.lower()]
    return dict(op["responses"][str(status)]["content"][media]["schema"])


def check_response(doc: dict[str, Any], req: Request, status: int, body: Any) -> None:
    """Fail (AssertionError naming every violation) unless ``body`` matches the published response schema;
    ``$ref``s resolve within ``doc`` (OpenAPI 3.1 schemas are JSON Schema 2020-12)."""
    schema = response_schema(doc, req, status) | {"components": doc.get("components", {})}
    errors = sorted(Draft202012Validator(schema).iter_errors(body), key=str)
    assert not errors, f"{req!r} -> {status}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message}" for e in errors[:5])
