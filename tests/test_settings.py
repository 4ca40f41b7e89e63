"""Configuration: production refuses weak or missing secrets, naming the variable."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from stellar_sdk import Keypair

import core.settings as settings_module
from core.files.crypto import KeyRing
from core.settings import ConfigError, load_settings
from service import settings_docs

ROOT = Path(__file__).resolve().parent.parent
GOOD = {
    "JWT_SECRET": secrets.token_urlsafe(48),
    "ENCRYPTION_KEYS": KeyRing.generate_entry("p1"),
    "PUBLIC_BASE_URL": "https://legacy.example.org",
    "URI_REQUEST_SIGNING_SEED": Keypair.random().secret,
}
# A last character other than the seed's own: the checksum breaks (the same one would not).
_OTHER_LAST = "B" if GOOD["URI_REQUEST_SIGNING_SEED"].endswith("A") else "A"


def prod(tmp_path, **env):
    return {"APP_ENV": "production", "DATA_DIR": str(tmp_path), **env}


def test_production_with_good_secrets_loads(tmp_path):
    settings = load_settings(prod(tmp_path, **GOOD))
    assert settings.environment == "production"
    assert settings.key_ring.primary_id == "p1"
    assert not (tmp_path / "dev-secrets.json").exists()


@pytest.mark.parametrize(
    "env,variable",
    [
        ({"ENCRYPTION_KEYS": GOOD["ENCRYPTION_KEYS"]}, "JWT_SECRET"),
        ({"JWT_SECRET": "short", "ENCRYPTION_KEYS": GOOD["ENCRYPTION_KEYS"]}, "JWT_SECRET"),
        ({"JWT_SECRET": "a" * 40, "ENCRYPTION_KEYS": GOOD["ENCRYPTION_KEYS"]}, "JWT_SECRET"),
        ({"JWT_SECRET": GOOD["JWT_SECRET"]}, "ENCRYPTION_KEYS"),
        ({"JWT_SECRET": GOOD["JWT_SECRET"], "ENCRYPTION_KEYS": "k1:notbase64!"}, "ENCRYPTION_KEYS"),
        ({**GOOD, "PORT": "eighty"}, "PORT"),
        ({**GOOD, "SERVICE_CONTRACT_ID": "GABC"}, "SERVICE_CONTRACT_ID"),
        # Right shape, wrong checksum (last character changed).
        (
            {**GOOD, "SERVICE_CONTRACT_ID": "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXF"},
            "SERVICE_CONTRACT_ID",
        ),
        (
            {**GOOD, "SERVICE_CONTRACT_ID": "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"},
            "SOROBAN_RPC_URL",
        ),
        ({**GOOD, "SOROBAN_RPC_TIMEOUT_SECONDS": "0"}, "SOROBAN_RPC_TIMEOUT_SECONDS"),
        ({**GOOD, "STORAGE_URL": "ftp://x"}, "STORAGE_URL"),
        ({**GOOD, "APP_ENV": "staging"}, "APP_ENV"),
        ({**GOOD, "LOG_LEVEL": "loud"}, "LOG_LEVEL"),
        ({k: v for k, v in GOOD.items() if k != "PUBLIC_BASE_URL"}, "PUBLIC_BASE_URL"),
        ({**GOOD, "PUBLIC_BASE_URL": "https://legacy.example.org/app"}, "PUBLIC_BASE_URL"),
        ({k: v for k, v in GOOD.items() if k != "URI_REQUEST_SIGNING_SEED"}, "URI_REQUEST_SIGNING_SEED"),
        # A public key where the seed belongs, and a seed with a broken checksum.
        ({**GOOD, "URI_REQUEST_SIGNING_SEED": Keypair.random().public_key}, "URI_REQUEST_SIGNING_SEED"),
        (
            {**GOOD, "URI_REQUEST_SIGNING_SEED": GOOD["URI_REQUEST_SIGNING_SEED"][:-1] + _OTHER_LAST},
            "URI_REQUEST_SIGNING_SEED",
        ),
    ],
)
def test_bad_configuration_names_the_variable(tmp_path, env, variable):
    with pytest.raises(ConfigError) as info:
        load_settings(prod(tmp_path, **env))
    assert variable in str(info.value)
    for value in env.values():
        if len(value) > 30:
            assert value not in str(info.value)


def test_development_generates_and_persists_secrets(tmp_path):
    first = load_settings({"APP_ENV": "development", "DATA_DIR": str(tmp_path)})
    second = load_settings({"APP_ENV": "development", "DATA_DIR": str(tmp_path)})
    assert len(first.jwt_secret) >= 32
    assert first.jwt_secret == second.jwt_secret
    assert first.key_ring.primary_id == second.key_ring.primary_id
    assert first.uri_request_signing_seed == second.uri_request_signing_seed
    assert first.uri_request_signing_key.secret == first.uri_request_signing_seed
    assert oct((tmp_path / "dev-secrets.json").stat().st_mode & 0o777) == "0o600"
    # The service's own origin by default, on its own port; no web client unless one is named.
    assert first.public_base_url == "http://localhost:8080"
    assert first.public_app_url == ""
    moved = load_settings({"APP_ENV": "development", "DATA_DIR": str(tmp_path), "PORT": "9123"})
    assert moved.public_base_url == "http://localhost:9123"


def test_a_dev_secrets_file_from_before_the_signing_seed_gets_it_added(tmp_path):
    """Sessions and sealed files survive the upgrade: only the missing secret is generated."""
    old = {"JWT_SECRET": secrets.token_urlsafe(48), "ENCRYPTION_KEYS": KeyRing.generate_entry("dev1")}
    (tmp_path / "dev-secrets.json").write_text(json.dumps(old))
    loaded = load_settings({"APP_ENV": "development", "DATA_DIR": str(tmp_path)})
    assert loaded.jwt_secret == old["JWT_SECRET"]
    stored = json.loads((tmp_path / "dev-secrets.json").read_text())
    assert {k: stored[k] for k in old} == old
    assert stored["URI_REQUEST_SIGNING_SEED"] == loaded.uri_request_signing_seed


def test_public_base_url_and_app_url_are_kept_apart(tmp_path):
    settings = load_settings(
        prod(
            tmp_path,
            **{**GOOD, "PUBLIC_BASE_URL": "https://legacy.example.org/"},
            PUBLIC_APP_URL="https://app.example.org",
        )
    )
    assert settings.public_base_url == "https://legacy.example.org"
    assert settings.public_app_url == "https://app.example.org"
    assert load_settings(prod(tmp_path, **GOOD)).public_app_url == ""


def test_serve_refuses_to_start_in_production_without_secret(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"JWT_SECRET", "ENCRYPTION_KEYS"}}
    env.update(APP_ENV="production", DATA_DIR=str(tmp_path), ENCRYPTION_KEYS=GOOD["ENCRYPTION_KEYS"])
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "JWT_SECRET" in proc.stderr


# The declaration in core/settings.py is the one source: docs/configuration.md's table and .env.example
# follow it.


def env_example() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            assert name not in values, f".env.example lists {name} twice"
            values[name] = value
    return values


def test_the_configuration_table_is_the_declaration():
    document = (ROOT / "docs" / "configuration.md").read_text()
    assert settings_docs.TABLE_FILE == ROOT / "docs" / "configuration.md"
    assert document == settings_docs.rewrite_table(document), (
        "docs/configuration.md's table of variables disagrees with core/settings.py;"
        " run `.venv/bin/python -m service.settings_docs` to regenerate it"
    )
    readme = (ROOT / "README.md").read_text()
    assert settings_docs.TABLE_BEGIN not in readme and "(docs/configuration.md)" in readme


def test_env_example_lists_every_declared_variable_with_its_default():
    listed = env_example()
    declared = {var.name: settings_docs.example_value(var) for var in settings_module.VARIABLES}
    assert sorted(listed) == sorted(declared), (
        "add or remove the variable in .env.example or core/settings.py"
    )
    assert listed == declared, "a value in .env.example is not the declared default (or example)"


def test_each_variable_is_declared_once_and_secrets_stay_out_of_repr(tmp_path):
    names = [var.name for var in settings_module.VARIABLES]
    assert len(names) == len(set(names))
    loaded = load_settings({"APP_ENV": "test", "DATA_DIR": str(tmp_path), **GOOD})
    for attr, _, var in settings_module.FIELDS:
        if var.secret:
            assert f"{attr}=" not in repr(loaded)
    assert GOOD["JWT_SECRET"] not in repr(loaded)


@pytest.mark.parametrize(
    "variable", [var for _, kind, var in settings_module.FIELDS if kind is int], ids=lambda var: var.name
)
def test_every_integer_is_checked_against_its_bounds(tmp_path, variable):
    base = {"APP_ENV": "test", "DATA_DIR": str(tmp_path), **GOOD}
    for bad in ["ten", str((variable.minimum or 0) - 1)] + (
        [str(variable.maximum + 1)] if variable.maximum else []
    ):
        with pytest.raises(ConfigError, match=variable.name):
            load_settings({**base, variable.name: bad})
    attr = next(a for a, _, v in settings_module.FIELDS if v is variable)
    lowest = variable.minimum or 0
    assert getattr(load_settings({**base, variable.name: str(lowest)}), attr) == lowest


def test_unset_or_empty_takes_the_declared_default(tmp_path):
    base = {"APP_ENV": "test", "DATA_DIR": str(tmp_path), **GOOD}
    empty = load_settings({**base, "PORT": "", "LOG_LEVEL": " ", "HOST": ""})
    assert (empty.port, empty.log_level, empty.host) == (8080, "INFO", "0.0.0.0")
    assert load_settings({**base, "LOG_LEVEL": "debug"}).log_level == "DEBUG"
