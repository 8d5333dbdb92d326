"""Label and field selectors parsed as kube-apiserver parses them: what matches, and every refusal
in its words (each message below is what kube-apiserver v1.35 answered for the same selector)."""

from __future__ import annotations

import urllib.parse

import pytest
from fakeapi.fixtures import FakeApi
from sandbox_support import raw

from sandbox.apiserver.errors import ApiError
from sandbox.apiserver.kinds import Registry
from sandbox.apiserver.label_selectors import parse_label_selector
from sandbox.apiserver.selectors import parse_field_selector

REFUSED_LABEL_SELECTORS = [
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a===b", "unable to parse requirement: found '=', expected: identifier"),
    (
        "a>b",
        "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    ("Bad Key", "unable to parse requirement: found 'Key', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=bad value!", "found 'value', expected: ',' or 'end of string'"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a!", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
    ("a,", "found '', expected: identifier after ','"),
    ("/a", 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'),
    ("a in", "unable to parse requirement: found '' expected: '('"),
    ("team in a", "unable to parse requirement: found 'a' expected: '('"),
]


@pytest.mark.parametrize(("selector", "message"), REFUSED_LABEL_SELECTORS, ids=[s for s, _ in REFUSED_LABEL_SELECTORS])
def test_a_malformed_label_selector_is_refused_as_the_real_server_refuses_it(selector: str, message: str) -> None:
    with pytest.raises(ApiError) as raised:
        parse_label_selector(selector)
    assert (raised.value.code, raised.value.message) == (400, message)


MATCHES = [
    ("team", {"team": "a"}, True),
    ("team", {}, False),
    ("!team", {}, True),
    ("team!=a", {}, True),
    ("team notin (a,b)", {"team": "c"}, True),
    ("team in (a,,b)", {"team": ""}, True),
    ("team notin ()", {"team": "a"}, True),
    ("size>1", {"size": "2"}, True),
    ("size<1", {"size": "x"}, False),
    ("a=,b", {"a": "", "b": "x"}, True),
]


@pytest.mark.parametrize(("selector", "labels", "matches"), MATCHES, ids=[m[0] for m in MATCHES])
def test_label_selectors_match_as_apimachinery_matches(selector: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(selector)(labels) is matches


FIELD_SELECTORS = [
    ("v1", "Pod", "data.x=1", "field label not supported: data.x"),
    (
        "v1",
        "ConfigMap",
        "data.x=1",
        '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
    ),
    ("batch/v1", "Job", "data.x=1", 'field label "data.x" not supported for Job'),
    ("kueue.x-k8s.io/v1beta2", "Workload", "data.x=1", "field label not supported: data.x"),
    ("v1", "Pod", "metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("v1", "Pod", "a=b=c", "invalid field selector: unescaped character in value: 61"),
]


@pytest.mark.parametrize(("api_version", "kind", "selector", "message"), FIELD_SELECTORS)
def test_each_kind_refuses_a_field_selector_in_its_own_words(
    api_version: str, kind: str, selector: str, message: str
) -> None:
    rtype = Registry().by_kind(api_version, kind)
    assert rtype is not None
    with pytest.raises(ApiError) as raised:
        parse_field_selector(selector, rtype)
    assert (raised.value.code, raised.value.message) == (400, message)


async def test_selectors_filter_a_list_over_http(fake_api: FakeApi) -> None:
    configmaps = "/api/v1/namespaces/default/configmaps"
    async with raw(fake_api) as api:
        for name, labels in (("a", {"team": "a"}), ("b", {"team": "b"}), ("none", {})):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}
            await api.send("POST", configmaps, body)
        query = urllib.parse.urlencode({"labelSelector": "team!=a", "fieldSelector": "metadata.name!=none"})
        listed = await api.send("GET", f"{configmaps}?{query}")
        refused = await api.send("GET", f"{configmaps}?labelSelector=team+in+a")
    assert [item["metadata"]["name"] for item in listed.body["items"]] == ["b"]
    assert refused.status == 400
    assert refused.body["message"] == "unable to parse requirement: found 'a' expected: '('"
