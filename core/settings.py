"""Configuration from environment variables only (12-factor), validated once at start-up.

Every variable is listed in `.env.example` and the README's configuration table. A bad value
raises `ConfigError` naming the variable, so an operator sees what to fix before any traffic.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from stellar_sdk import StrKey

from core.crypto import KeyRing

ENVIRONMENTS = ("development", "production", "test")
CONTRACT_ID_RE = re.compile(r"^C[A-Z2-7]{55}$")
# Where claim links point when PUBLIC_APP_URL is unset outside production (a local web client).
DEV_PUBLIC_APP_URL = "http://localhost:5173"
WEAK_SECRETS = {"change-me", "changeme", "secret", "password"}


class ConfigError(ValueError):
    """A configuration variable is missing or invalid; the message names it."""


@dataclass(frozen=True)
class Settings:
    environment: str = "development"
    service_name: str = "legacy-planning-service"
    host: str = "0.0.0.0"  # noqa: S104 - a server binds all interfaces unless HOST says otherwise
    port: int = 8080
    database_url: str = ""
    redis_url: str = ""
    data_dir: Path = Path(".data")
    jwt_secret: str = field(default="", repr=False)
    jwt_issuer: str = "legacy-planning-service"
    jwt_audience: str = "legacy-planning-web"
    jwt_ttl_seconds: int = 7 * 24 * 3600
    challenge_ttl_seconds: int = 300
    encryption_keys: KeyRing | None = field(default=None, repr=False)
    rate_limit_challenge_per_wallet: int = 10
    rate_limit_challenge_per_ip: int = 60
    trusted_proxy_hops: int = 0
    storage_url: str = ""
    s3_endpoint_url: str = ""
    aws_region: str = "us-east-1"
    archive_max_bytes: int = 100 * 1024 * 1024
    email_provider_api_key: str = field(default="", repr=False)
    email_provider_url: str = ""
    email_from: str = ""
    public_app_url: str = DEV_PUBLIC_APP_URL
    plan_min_check_in_interval_seconds: int = 7 * 24 * 3600
    plan_min_cancel_window_seconds: int = 24 * 3600
    lifecycle_scan_seconds: int = 60
    service_contract_id: str = ""
    soroban_rpc_url: str = ""
    soroban_rpc_timeout_seconds: int = 10
    stellar_network_passphrase: str = "Test SDF Network ; September 2015"  # noqa: S105 - public
    log_level: str = "INFO"
    arq_queue_name: str = "arq:queue"
    db_pool_max: int = 20

    @property
    def is_production(self) -> bool:
        return self.environment == "production"

    @property
    def key_ring(self) -> KeyRing:
        if self.encryption_keys is None:
            raise ConfigError("ENCRYPTION_KEYS is not configured")
        return self.encryption_keys


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def _dev_secrets(data_dir: Path) -> dict[str, str]:
    """Generate once and persist the dev JWT secret and key ring, so restarts keep sessions and files."""
    path = data_dir / "dev-secrets.json"
    if path.exists():
        loaded: dict[str, str] = json.loads(path.read_text())
        return loaded
    data_dir.mkdir(parents=True, exist_ok=True)
    values = {
        "JWT_SECRET": secrets.token_urlsafe(48),
        "ENCRYPTION_KEYS": KeyRing.generate_entry("dev1"),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(values, fh)
    return values


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from the environment; raise ConfigError naming the offending variable."""
    env = os.environ if env is None else env
    environment = env.get("APP_ENV", "development").strip() or "development"
    if environment not in ENVIRONMENTS:
        raise ConfigError(f"APP_ENV must be one of {', '.join(ENVIRONMENTS)}, got {environment!r}")
    data_dir = Path(env.get("DATA_DIR", ".data")).resolve()

    jwt_secret = env.get("JWT_SECRET", "")
    keys_raw = env.get("ENCRYPTION_KEYS", "")
    if environment != "production" and (not jwt_secret or not keys_raw):
        dev = _dev_secrets(data_dir)
        jwt_secret = jwt_secret or dev["JWT_SECRET"]
        keys_raw = keys_raw or dev["ENCRYPTION_KEYS"]
    if not jwt_secret:
        raise ConfigError("JWT_SECRET is required in production (at least 32 random bytes)")
    if len(jwt_secret.encode()) < 32 or jwt_secret.lower() in WEAK_SECRETS or len(set(jwt_secret)) < 8:
        raise ConfigError("JWT_SECRET must be at least 32 random bytes (e.g. `openssl rand -base64 48`)")
    if not keys_raw:
        raise ConfigError("ENCRYPTION_KEYS is required in production (id:base64key[,id:base64key...])")
    try:
        key_ring = KeyRing.parse(keys_raw)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    contract_id = env.get("SERVICE_CONTRACT_ID", "").strip()
    if contract_id and not (CONTRACT_ID_RE.match(contract_id) and StrKey.is_valid_contract(contract_id)):
        raise ConfigError(
            "SERVICE_CONTRACT_ID must be a contract id (C followed by 55 base32 characters, valid checksum)"
        )
    rpc_url = env.get("SOROBAN_RPC_URL", "").strip()
    if contract_id and not rpc_url.startswith(("http://", "https://")):
        raise ConfigError("SOROBAN_RPC_URL (http:// or https://) is required when SERVICE_CONTRACT_ID is set")

    storage_url = env.get("STORAGE_URL", "").strip()
    if storage_url and not storage_url.startswith(("s3://", "file://")):
        raise ConfigError("STORAGE_URL must start with s3:// or file://")

    public_app_url = env.get("PUBLIC_APP_URL", "").strip().rstrip("/")
    if not public_app_url:
        if environment == "production":
            raise ConfigError(
                "PUBLIC_APP_URL is required in production (the web client's origin, for claim links)"
            )
        public_app_url = DEV_PUBLIC_APP_URL
    if not public_app_url.startswith(("https://", "http://")):
        raise ConfigError("PUBLIC_APP_URL must be an http(s) origin, e.g. https://legacy.example.org")

    log_level = env.get("LOG_LEVEL", "INFO").upper()
    if log_level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ConfigError(f"LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {log_level!r}")

    return Settings(
        environment=environment,
        service_name=env.get("SERVICE_NAME", "legacy-planning-service"),
        host=env.get("HOST", "0.0.0.0"),  # noqa: S104
        port=_int(env, "PORT", 8080, minimum=1),
        database_url=env.get("DATABASE_URL", ""),
        redis_url=env.get("REDIS_URL", ""),
        data_dir=data_dir,
        jwt_secret=jwt_secret,
        jwt_issuer=env.get("JWT_ISSUER", "legacy-planning-service"),
        jwt_audience=env.get("JWT_AUDIENCE", "legacy-planning-web"),
        jwt_ttl_seconds=_int(env, "JWT_TTL_SECONDS", 7 * 24 * 3600, minimum=60),
        challenge_ttl_seconds=_int(env, "CHALLENGE_TTL_SECONDS", 300, minimum=10),
        encryption_keys=key_ring,
        rate_limit_challenge_per_wallet=_int(env, "RATE_LIMIT_CHALLENGE_PER_WALLET", 10, minimum=1),
        rate_limit_challenge_per_ip=_int(env, "RATE_LIMIT_CHALLENGE_PER_IP", 60, minimum=1),
        trusted_proxy_hops=_int(env, "TRUSTED_PROXY_HOPS", 0),
        storage_url=storage_url,
        s3_endpoint_url=env.get("S3_ENDPOINT_URL", ""),
        aws_region=env.get("AWS_REGION", "us-east-1"),
        archive_max_bytes=_int(env, "ARCHIVE_MAX_BYTES", 100 * 1024 * 1024, minimum=1),
        email_provider_api_key=env.get("EMAIL_PROVIDER_API_KEY", ""),
        email_provider_url=env.get("EMAIL_PROVIDER_URL", ""),
        email_from=env.get("EMAIL_FROM", ""),
        public_app_url=public_app_url,
        plan_min_check_in_interval_seconds=_int(
            env, "PLAN_MIN_CHECK_IN_INTERVAL_SECONDS", 7 * 24 * 3600, minimum=1
        ),
        plan_min_cancel_window_seconds=_int(env, "PLAN_MIN_CANCEL_WINDOW_SECONDS", 24 * 3600),
        lifecycle_scan_seconds=_int(env, "LIFECYCLE_SCAN_SECONDS", 60, minimum=1),
        service_contract_id=contract_id,
        soroban_rpc_url=rpc_url,
        soroban_rpc_timeout_seconds=_int(env, "SOROBAN_RPC_TIMEOUT_SECONDS", 10, minimum=1),
        stellar_network_passphrase=env.get("STELLAR_NETWORK_PASSPHRASE", "Test SDF Network ; September 2015"),
        log_level=log_level,
        arq_queue_name=env.get("ARQ_QUEUE_NAME", "arq:queue"),
        db_pool_max=_int(env, "DB_POOL_MAX", 20, minimum=1),
    )
