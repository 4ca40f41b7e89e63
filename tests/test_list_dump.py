"""Lists are dumped by `api.common.dump_many`, a faster runner of the same schemas: every list
element must equal what the single-item route (plain `schema.dump`) returns for that row."""

from __future__ import annotations

import ast
import datetime
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from marshmallow import fields

from api.activity import ActivitySchema
from api.common import dump_many
from api.schemas import BaseSchema, UtcDateTime
from core import db
from models import activity
from models.pagination import PageRequest
from tests.helpers import sign_in
from tests.plan_helpers import COLLECTIONS, create

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("collection", COLLECTIONS)
async def test_list_items_equal_single_item_responses(client, collection):
    session = await sign_in(client)
    overrides = {
        "guardians": [{}, {"relationship": None}],
        "assets": [{}, {"assetCode": None, "description": "Cash in the safe"}],
        "messages": [{}, {"title": None, "releaseRule": {"kind": "after_release", "value": 30}}],
    }.get(collection, [{}, {"allocationPercentage": 12.5}])
    for extra in overrides:
        await create(client, session, collection, **extra)
    listed = await (await client.get(f"/api/{collection}", headers=session.headers)).json()
    assert len(listed) == 2
    for item in listed:
        single = await (await client.get(f"/api/{collection}/{item['id']}", headers=session.headers)).json()
        assert item == single


def test_dump_many_matches_marshmallow_on_edge_values():
    class Sample(BaseSchema):
        id = fields.String()
        count = fields.Integer(allow_none=True)
        when = UtcDateTime(attribute="created_at", allow_none=True)
        renamed = fields.String(data_key="otherName", attribute="plain")

    east = datetime.timezone(datetime.timedelta(hours=5))
    rows = [
        {
            "id": uuid.uuid4(),
            "count": Decimal(3),
            "created_at": datetime.datetime(2026, 1, 1, 5, tzinfo=east),
            "plain": "x",
        },
        {"id": "y", "count": None, "created_at": None, "plain": None},
        {"id": "z"},  # absent keys are left out, as marshmallow does
    ]
    schema = Sample()
    assert dump_many(schema, rows) == schema.dump(rows, many=True)
    assert dump_many(schema, rows)[0]["when"] == "2026-01-01T00:00:00.000Z"


async def test_activity_rows_dump_like_marshmallow(client, settings):
    session = await sign_in(client)
    await create(client, session, "assets")
    pool = await db.create_pool(settings.database_url, 2)
    try:
        page = await activity.list_for_user(
            pool,
            settings.key_ring,
            user_id=session.user["id"],
            filters=activity.ActivityFilter(),
            page=PageRequest(),
        )
    finally:
        pool.close()
        await pool.wait_closed()
    assert len(page.items) == 2
    schema = ActivitySchema()
    assert dump_many(schema, page.items) == schema.dump(page.items, many=True)
    listed = await (await client.get("/api/activity", headers=session.headers)).json()
    assert listed == schema.dump(page.items, many=True)


def test_computed_fields_dump_like_marshmallow():
    class Computed(BaseSchema):
        id = fields.String()
        twice = fields.Method("double")
        fixed = fields.Constant("c")
        defaulted = fields.String(dump_default="d")

        def double(self, row):
            return row["id"] * 2

    rows = [{"id": "ab"}, {"id": "c", "defaulted": None}]
    assert dump_many(Computed(), rows) == Computed().dump(rows, many=True)
    assert dump_many(Computed(), rows)[0] == {"id": "ab", "twice": "abab", "fixed": "c", "defaulted": "d"}


def _dump_hooks(base: Path) -> list[str]:
    """`module:line` of each @pre_dump / @post_dump in api/: `dump_many` runs a schema's fields only."""
    found = []
    for path in sorted((base / "api").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for decorator in node.decorator_list:
                    name = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
                    if name.rpartition(".")[2] in ("pre_dump", "post_dump"):
                        found.append(f"{path.relative_to(base)}:{decorator.lineno}")
    return found


def test_no_schema_in_api_declares_dump_hooks():
    """Derive a value with a field (`fields.Function`, a `Whole` of the record) or in the model."""
    assert _dump_hooks(ROOT) == []


def test_the_hook_check_sees_a_hook(tmp_path):
    (tmp_path / "api" / "plan").mkdir(parents=True)
    (tmp_path / "api" / "plan" / "schemas.py").write_text(
        "from marshmallow import post_dump, pre_load\nimport marshmallow\n"
        "class A:\n    @post_dump\n    def a(self, data, **kw): ...\n"
        "    @marshmallow.pre_dump(pass_many=True)\n    def b(self, data, **kw): ...\n"
        "    @pre_load\n    def c(self, data, **kw): ...\n"
    )
    assert _dump_hooks(tmp_path) == ["api/plan/schemas.py:4", "api/plan/schemas.py:6"]


@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(1, 1, 1, tzinfo=datetime.UTC),
        datetime.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
        datetime.datetime(2026, 3, 1, 0, 30, 0, 1000, tzinfo=datetime.timezone(-datetime.timedelta(hours=3))),
        datetime.datetime(9999, 12, 31, 13, 0, 0, 999, tzinfo=datetime.timezone(datetime.timedelta(hours=9))),
    ],
)
def test_utc_times_are_iso_8601_milliseconds_with_z(value):
    expected = value.astimezone(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert UtcDateTime.to_wire(value) == expected


def test_every_field_of_a_listed_resource_takes_the_fast_path():
    """A field type `dump_many` has no direct converter for falls back to marshmallow's per-row
    `serialize`, which once cost the beneficiaries' list about a sixth of its CPU (a language
    field subclassing String): every field of the listed resources has one."""
    from api.common import _converter
    from api.contents.schemas import AssetSchema, BeneficiarySchema, GuardianSchema, MessageSchema

    slow = [
        f"{schema.__name__}.{name}"
        for schema in (BeneficiarySchema, GuardianSchema, AssetSchema, MessageSchema)
        for name, field in schema().dump_fields.items()
        if _converter(field) is None and not isinstance(field, fields.Method | fields.Function)
    ]
    assert slow == []
