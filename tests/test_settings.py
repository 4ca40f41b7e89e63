"""Configuration: production refuses weak or missing secrets, naming the variable."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from core.crypto import KeyRing
from core.settings import ConfigError, load_settings

ROOT = Path(__file__).resolve().parent.parent
GOOD = {
    "JWT_SECRET": secrets.token_urlsafe(48),
    "ENCRYPTION_KEYS": KeyRing.generate_entry("p1"),
    "PUBLIC_APP_URL": "https://legacy.example.org",
}


def prod(tmp_path, **env):
    return {"APP_ENV": "production", "DATA_DIR": str(tmp_path), **env}


def test_production_with_good_secrets_loads(tmp_path):
    settings = load_settings(prod(tmp_path, **GOOD))
    assert settings.is_production
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
    assert oct((tmp_path / "dev-secrets.json").stat().st_mode & 0o777) == "0o600"


def test_serve_refuses_to_start_in_production_without_secret(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"JWT_SECRET", "ENCRYPTION_KEYS"}}
    env.update(APP_ENV="production", DATA_DIR=str(tmp_path), ENCRYPTION_KEYS=GOOD["ENCRYPTION_KEYS"])
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "serve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "JWT_SECRET" in proc.stderr
