"""The served OpenAPI document is the contract a web client generates its types from: it is valid
OpenAPI 3 (openapi-spec-validator), and the TypeScript that openapi-typescript generates from it
compiles under `tsc --strict`. openapi-typescript and typescript come from the npm registry into
`.data/npm/openapi-typescript` (gitignored) the first time; without npm the TypeScript test skips,
except under CI (`CI=true`), where it fails, as the browser tests do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from openapi_spec_validator import OpenAPIV30SpecValidator

from tests.browser import npm_install

ROOT = Path(__file__).resolve().parent.parent
NPM_DIR = ROOT / ".data" / "npm" / "openapi-typescript"
TSC_OPTIONS = ["--target", "es2022", "--module", "es2022", "--moduleResolution", "bundler"]
PACKAGES = {"openapi-typescript": "7.13.0", "typescript": "5.9.3"}

# A few of the generated types, used as a client would: a list, a created record, an error body.
CLIENT = """\
import type { components, paths } from "./api";

type Beneficiary = components["schemas"]["Beneficiary"];
type Overview = paths["/api/legacy"]["get"]["responses"][200]["content"]["application/json"];
type ApiError = components["schemas"]["Error"];

export function shareOf(list: Beneficiary[]): number {
  return list.reduce((sum, b) => sum + b.allocationPercentage, 0);
}

export function stateOf(plan: Overview): string {
  const id: string = plan.id;
  return `${id}: ${plan.status}, ${plan.approvals.count} of ${plan.approvals.threshold}`;
}

export function say(error: ApiError): string {
  return `${error.statusCode} ${error.error}`;
}
"""


async def _document(client: Any) -> dict[str, Any]:
    resp = await client.get("/api/docs/openapi.json")
    assert resp.status == 200
    document: dict[str, Any] = await resp.json()
    return document


def _errors(document: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in OpenAPIV30SpecValidator(document).iter_errors()
    ]


async def test_the_served_document_is_valid_openapi_3(client):
    document = await _document(client)
    assert _errors(document) == []
    # What the other media types became: the page is HTML, the export a zip, the stylesheet CSS.
    paths = document["paths"]
    assert set(paths["/claim/{token}"]["get"]["responses"]["200"]["content"]) == {"text/html"}
    assert set(paths["/api/legacy/export"]["get"]["responses"]["200"]["content"]) == {"application/zip"}
    assert set(paths["/page.css"]["get"]["responses"]["200"]["content"]) == {"text/css"}


def test_the_validator_sees_what_was_wrong():
    """The check can fail: Swagger 2's `produces` and an operation with no response are errors."""
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/x": {"get": {"responses": {}, "produces": ["text/css"]}}},
    }
    assert len(_errors(document)) == 2


def _npm_tools() -> Path:
    """The pinned openapi-typescript and tsc, installed from the npm registry once per machine."""
    npm_install(NPM_DIR, PACKAGES)
    return NPM_DIR / "node_modules" / ".bin"


async def test_a_typescript_client_generated_from_it_compiles_strictly(client, tmp_path):
    tools = _npm_tools()
    (tmp_path / "openapi.json").write_text(json.dumps(await _document(client)))
    generated = _generate(tools, tmp_path)
    assert generated.returncode == 0, generated.stderr
    (tmp_path / "client.ts").write_text(CLIENT)
    compiled = _tsc(tools, tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def _generate(tools: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools / "openapi-typescript"), str(folder / "openapi.json"), "-o", str(folder / "api.ts")],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tsc(tools: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools / "tsc"), "--strict", "--noEmit", *TSC_OPTIONS, str(folder / "client.ts")],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_compile_check_sees_a_type_error(tmp_path):
    """tsc can fail here: a field the document does not have is an error under --strict."""
    tools = _npm_tools()
    (tmp_path / "api.ts").write_text("export interface components { schemas: { Error: { code: number } } }\n")
    (tmp_path / "client.ts").write_text(
        'import type { components } from "./api";\n'
        'export const wrong = (e: components["schemas"]["Error"]): string => e.nope;\n'
    )
    assert _tsc(tools, tmp_path).returncode != 0
