"""JSON bodies (api.common.json_response): orjson where it gives what the standard library would,
the standard library for what orjson refuses, and the same TypeError for what neither encodes."""

from __future__ import annotations

import datetime
import json
import uuid

import pytest

from api.common import json_response


def body(data: object) -> object:
    resp = json_response(data)
    assert resp.content_type == "application/json" and resp.charset == "utf-8"
    assert isinstance(resp.body, bytes)
    return json.loads(resp.body)


def test_plain_values_round_trip():
    data = {"a": [1, 2.5, None, True, "é ✓ 名"], "b": {"c": ""}}
    assert body(data) == data


@pytest.mark.parametrize(
    "data",
    [
        {"lone": "\ud800"},  # a lone surrogate (orjson refuses it; the standard library escapes it)
        {"big": 2**70},  # past 64 bits
        {1: "int key"},  # a non-string key
    ],
)
def test_what_orjson_refuses_is_encoded_as_the_standard_library_does(data):
    resp = json_response(data)
    assert resp.body == json.dumps(data).encode()


@pytest.mark.parametrize(
    "value", [datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), datetime.date(2026, 1, 1)]
)
def test_a_datetime_in_a_body_is_still_an_error(value):
    # Times go out as core.clock.wire_time; one that slips through unformatted must not pass.
    with pytest.raises(TypeError):
        json_response({"at": value})


def test_status_and_headers():
    resp = json_response({"id": str(uuid.uuid4())}, status=201, headers={"Link": "<x>"})
    assert resp.status == 201 and resp.headers["Link"] == "<x>"
