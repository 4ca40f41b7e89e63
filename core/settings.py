"""Configuration from environment variables only (12-factor), validated once at start-up.

Each variable is declared once, as a field of `Settings` built by `setting()`: its name, default,
bounds or allowed values, one-line doc and secret flag; the type is the field's annotation.
`load_settings()` reads every variable from that declaration, the table of variables in
docs/configuration.md is generated from it (`python -m service.settings_docs` rewrites it) and a
test checks both the table and `.env.example` against it. A bad value raises `ConfigError`
naming the variable, so an operator sees what to fix before any traffic. Why not
pydantic-settings: docs/configuration.md.
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import os
import re
import secrets
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stellar_sdk import Keypair, StrKey

from core.files.crypto import KeyRing
from core.text import i18n
from core.text.cleaning import clean_line

ENVIRONMENTS = ("development", "production", "test")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
CONTRACT_ID_RE = re.compile(r"^C[A-Z2-7]{55}$")
WEAK_SECRETS = {"change-me", "changeme", "secret", "password"}
TESTNET_PASSPHRASE = "Test SDF Network ; September 2015"  # noqa: S105 - public network name
SECRETS_GENERATED_IN_DEV = ("JWT_SECRET", "ENCRYPTION_KEYS", "URI_REQUEST_SIGNING_SEED")
_VARIABLE = "variable"


class ConfigError(ValueError):
    """A configuration variable is missing or invalid; the message names it."""


@dataclass(frozen=True)
class Variable:
    """How one environment variable is read, checked and documented."""

    name: str
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    upper: bool = False  # compare and store upper-cased (LOG_LEVEL=debug is fine)
    check: Callable[[str], str | None] | None = None  # says what is wrong with a value, or None
    secret: bool = False  # never printed, never given a value in .env.example
    shown_default: str | None = None  # the table's default column when the literal one says too little
    example: str | None = None  # .env.example value when it is not the default


def setting(name: str, default: Any, doc: str, **options: Any) -> Any:
    """A `Settings` field read from the environment variable `name`."""
    variable = Variable(name, doc, **options)
    return dataclasses.field(default=default, repr=not variable.secret, metadata={_VARIABLE: variable})


def _languages(value: str) -> str | None:
    tags = [t.strip() for t in value.split(",")]
    if "en" not in tags or any(not t for t in tags):
        return "must be comma-separated language tags including en, e.g. en,es,fr,de,pt-BR,ar"
    missing = [t for t in tags if not i18n.has_catalog(t)]
    if missing:
        return "has no catalog (core/text/locale/<lang>/LC_MESSAGES/messages.po) for " + ", ".join(missing)
    return None


def _storage_url(value: str) -> str | None:
    return None if value.startswith(("s3://", "file://")) else "must start with s3:// or file://"


def _contract_id(value: str) -> str | None:
    if CONTRACT_ID_RE.match(value) and StrKey.is_valid_contract(value):
        return None
    return "must be a contract id (C followed by 55 base32 characters, valid checksum)"


def _http_url(value: str) -> str | None:
    return None if value.startswith(("http://", "https://")) else "must start with http:// or https://"


def _http_origin(value: str) -> str | None:
    if value.startswith(("https://", "http://")):
        return None
    return "must be an http(s) origin, e.g. https://legacy.example.org"


_ORIGIN_RE = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")


def _origins(value: str) -> str | None:
    for origin in (o.strip() for o in value.split(",")):
        if not _ORIGIN_RE.match(origin):
            return f"each origin must be exact, like https://app.example.org (no path, no *), got {origin!r}"
    return None


def _exact_origin(value: str) -> str | None:
    if _ORIGIN_RE.match(value.rstrip("/")):
        return None
    return "must be an exact origin, like https://legacy.example.org (scheme and host, no path)"


def _secret_seed(value: str) -> str | None:
    if StrKey.is_valid_ed25519_secret_seed(value):
        return None
    return "must be a Stellar secret seed (S followed by 55 base32 characters, valid checksum)"


def _webhook_secret(value: str) -> str | None:
    """A Standard Webhooks secret: `whsec_` and base64 of at least 24 bytes (providers give 24-32)."""
    try:
        key = base64.b64decode(value.removeprefix("whsec_") + "==", validate=False)
    except ValueError:
        key = b""
    if not value.startswith("whsec_") or len(key) < 24:
        return "must be the webhook signing secret the provider shows, `whsec_` followed by base64"
    return None


OPERATOR_NAME_LIMIT = 80
# A contact address as people type one (no display name, no mailto:), or an https page.
_CONTACT_ADDRESS_RE = re.compile(r"^[^@\s<>\"(),;:]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
_CONTACT_PAGE_RE = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/\S*)?$")


def _operator_name(value: str) -> str | None:
    """Every email names it as who runs the service: one line a person reads, of a name's length."""
    if clean_line(value) != value:
        return "must be one line of visible characters (no control, bidi or invisible character)"
    if len(value) > OPERATOR_NAME_LIMIT:
        return f"must be at most {OPERATOR_NAME_LIMIT} characters (a name, e.g. Vance Family Office)"
    return None


def _operator_contact(value: str) -> str | None:
    """Every email gives it as whom to write to: it must be something a person can use."""
    if _CONTACT_ADDRESS_RE.match(value) or _CONTACT_PAGE_RE.match(value):
        return None
    return (
        "must be an email address (help@legacy.example.org) or an https:// page"
        f" (https://legacy.example.org/help), got {value!r}"
    )


def _strong_secret(value: str) -> str | None:
    if len(value.encode()) < 32 or value.lower() in WEAK_SECRETS or len(set(value)) < 8:
        return "must be at least 32 random bytes (e.g. `openssl rand -base64 48`)"
    return None


@dataclass(frozen=True)
class Settings:
    environment: str = setting(
        "APP_ENV",
        "development",
        "`production` refuses to start without `JWT_SECRET` (≥ 32 random bytes), `ENCRYPTION_KEYS`,"
        " `URI_REQUEST_SIGNING_SEED` and `PUBLIC_BASE_URL`",
        choices=ENVIRONMENTS,
    )
    service_name: str = setting(
        "SERVICE_NAME", "legacy-planning-service", "Named in sign-in challenges and `/api/health`"
    )
    # A server binds all interfaces unless HOST says otherwise.
    host: str = setting("HOST", "0.0.0.0", "Where the API listens (interface)")  # noqa: S104
    port: int = setting("PORT", 8080, "Where the API listens (TCP port)", minimum=1, maximum=65535)
    database_url: str = setting(
        "DATABASE_URL",
        "",
        "PostgreSQL URL; required by `serve`, `worker`, `migrate`",
        shown_default="(embedded in dev)",
        example="postgresql://postgres@127.0.0.1:5432/legacy",
    )
    redis_url: str = setting(
        "REDIS_URL",
        "",
        "Redis URL (`redis://`, `rediss://`, `unix://`) for jobs, challenges, rate limits",
        shown_default="(embedded in dev)",
        example="redis://127.0.0.1:6379/0",
    )
    db_pool_max: int = setting(
        "DB_POOL_MAX",
        20,
        "Most PostgreSQL connections of an API process; a worker opens min(this, its 16 jobs + 2). "
        "Keep the sum over all processes under `max_connections` (docs/operations.md)",
        minimum=1,
    )
    db_timeout_seconds: int = setting(
        "DB_TIMEOUT_SECONDS",
        30,
        "Longest wait for a free PostgreSQL connection or for one statement's answer; then 503",
        minimum=1,
    )
    redis_timeout_seconds: int = setting(
        "REDIS_TIMEOUT_SECONDS",
        2,
        "Longest wait for one Redis command or connect; past it the request answers 503",
        minimum=1,
    )
    request_body_timeout_seconds: int = setting(
        "REQUEST_BODY_TIMEOUT_SECONDS",
        30,
        "Longest wait for a JSON request body to arrive in full; past it, 408",
        minimum=1,
    )
    request_head_timeout_seconds: int = setting(
        "REQUEST_HEAD_TIMEOUT_SECONDS",
        10,
        "Longest wait for a request line and headers to arrive in full (from the connection's "
        "start, or from the first byte of a later request on it); past it, the connection is closed",
        minimum=1,
    )
    keepalive_timeout_seconds: int = setting(
        "KEEPALIVE_TIMEOUT_SECONDS",
        75,
        "How long an idle keep-alive connection is kept; set it above the idle timeout of the "
        "proxy in front (nginx 60 s, AWS ALB 60 s by default) so the proxy, not the API, closes first",
        minimum=1,
    )
    cors_allowed_origins: str = setting(
        "CORS_ALLOWED_ORIGINS",
        "",
        "Comma-separated exact origins allowed by CORS (bearer tokens, no cookies); unset: no CORS",
        check=_origins,
    )
    metrics_token: str = setting(
        "METRICS_TOKEN",
        "",
        "Bearer token for `GET /api/metrics` (Prometheus); unset: the route answers 404",
        secret=True,
    )
    data_dir: Path = setting(
        "DATA_DIR", Path(".data"), "Dev state: embedded databases, generated secrets, file storage"
    )
    log_level: str = setting(
        "LOG_LEVEL",
        "INFO",
        "`DEBUG`, `INFO`, `WARNING`, `ERROR`. Every line is one JSON object, arq's included; a cron run"
        ' that went well (arq\'s "→" and "←" lines, its health line) is a `DEBUG` line with its `job`,'
        " so `INFO` shows jobs, failures and the service's own lines",
        choices=LOG_LEVELS,
        upper=True,
    )
    jwt_secret: str = setting(
        "JWT_SECRET",
        "",
        "HS256 secret, ≥ 32 random bytes",
        check=_strong_secret,
        secret=True,
        shown_default="(generated in dev)",
    )
    jwt_issuer: str = setting("JWT_ISSUER", "legacy-planning-service", "Checked on every token (`iss`)")
    jwt_audience: str = setting("JWT_AUDIENCE", "legacy-planning-web", "Checked on every token (`aud`)")
    jwt_ttl_seconds: int = setting(
        "JWT_TTL_SECONDS", 7 * 24 * 3600, "Session lifetime (7 days, per spec)", minimum=60
    )
    challenge_ttl_seconds: int = setting(
        "CHALLENGE_TTL_SECONDS", 300, "Sign-in challenge lifetime", minimum=10
    )
    session_idle_seconds: int = setting(
        "SESSION_IDLE_SECONDS",
        1800,
        "An owner's page session ends after this long without a request (it never outlives"
        ' JWT_TTL_SECONDS); docs/security.md, "The owner\'s page session"',
        minimum=1,
    )
    encryption_keys: KeyRing | None = setting(
        "ENCRYPTION_KEYS",
        None,
        "`id:base64key[,id:base64key…]`, 32-byte keys, primary first",
        secret=True,
        shown_default="(generated in dev)",
    )
    rate_limit_challenge_per_wallet: int = setting(
        "RATE_LIMIT_CHALLENGE_PER_WALLET",
        10,
        "Challenges per wallet per minute from one client address (nobody else spends it)",
        minimum=1,
    )
    rate_limit_challenge_per_ip: int = setting(
        "RATE_LIMIT_CHALLENGE_PER_IP", 60, "Challenges per client IP per minute", minimum=1
    )
    rate_limit_claim_resend_per_ip: int = setting(
        "RATE_LIMIT_CLAIM_RESEND_PER_IP",
        10,
        "`POST /api/claim/resend` requests per client IP per hour before it answers 429",
        minimum=1,
    )
    rate_limit_heir_builds_per_hour: int = setting(
        "RATE_LIMIT_HEIR_BUILDS_PER_HOUR",
        20,
        "Unsigned contract calls built per heir per hour (the page's button, `/api/claim/:token/"
        "release/build` and `/claim/build`; each is two RPC calls) before they answer 429",
        minimum=1,
    )
    rate_limit_claim_misses_per_ip: int = setting(
        "RATE_LIMIT_CLAIM_MISSES_PER_IP",
        30,
        "Unknown claim tokens per client IP per minute before `/api/claim/*` answers 429 (valid tokens"
        " are never limited)",
        minimum=1,
    )
    rate_limit_check_in_misses_per_ip: int = setting(
        "RATE_LIMIT_CHECK_IN_MISSES_PER_IP",
        10,
        "Unknown, used or expired check-in links per client IP per minute before"
        " `POST /api/legacy/check-in/link` answers 429 (valid links are never limited)",
        minimum=1,
    )
    trusted_proxy_hops: int = setting(
        "TRUSTED_PROXY_HOPS",
        0,
        "Reverse proxies to trust for `X-Forwarded-For`; 0 uses the socket peer",
        minimum=0,
    )
    storage_url: str = setting(
        "STORAGE_URL",
        "",
        "`s3://bucket[/prefix]` or `file:///path`; unset: archive routes answer 503",
        check=_storage_url,
        shown_default="(dev: `file://.data/objects`)",
    )
    s3_endpoint_url: str = setting("S3_ENDPOINT_URL", "", "S3-compatible endpoint (MinIO…); unset: AWS")
    aws_region: str = setting("AWS_REGION", "us-east-1", "S3 region")
    archive_max_bytes: int = setting(
        "ARCHIVE_MAX_BYTES", 100 * 1024 * 1024, "Largest upload (100 MiB); larger is 413", minimum=1
    )
    archive_scrub_interval_seconds: int = setting(
        "ARCHIVE_SCRUB_INTERVAL_SECONDS",
        7 * 24 * 3600,
        "How often the worker's scrub reads each stored file whole again (7 days); `docs/archive.md`",
        minimum=1,
    )
    archive_scrub_bytes_per_second: int = setting(
        "ARCHIVE_SCRUB_BYTES_PER_SECOND",
        20 * 1024 * 1024,
        "The scrub's read rate cap per worker deployment (20 MiB/s), so it never starves the API",
        minimum=1,
    )
    email_provider_api_key: str = setting(
        "EMAIL_PROVIDER_API_KEY",
        "",
        "Email (JSON HTTP provider, see `docs/lifecycle.md`); unset: each email is `skipped` and logged",
        secret=True,
    )
    email_provider_url: str = setting("EMAIL_PROVIDER_URL", "", "Email provider endpoint")
    email_from: str = setting("EMAIL_FROM", "", "Sender address of the service's email")
    email_retry_base_seconds: int = setting(
        "EMAIL_RETRY_BASE_SECONDS",
        30,
        "First wait before an email the provider refused (429, 5xx, no answer) is tried again;"
        " it doubles per attempt up to 1 h, never before the provider's Retry-After",
        minimum=1,
    )
    email_to_named_people_per_day: int = setting(
        "EMAIL_TO_NAMED_PEOPLE_PER_DAY",
        25,
        "Emails one account may cause, in any rolling 24 h, to addresses its owner typed (guardian"
        " invitations and re-invitations, address confirmations); past it they wait as `deferred`"
        " and go out as the day frees (docs/security.md, Nobody's mail relay)",
        minimum=1,
    )
    email_to_named_people_per_client_per_day: int = setting(
        "EMAIL_TO_NAMED_PEOPLE_PER_CLIENT_PER_DAY",
        100,
        "The same emails caused from one client address (an IPv6 /64), across all accounts, in any"
        " rolling 24 h; past it they wait as `deferred` too",
        minimum=1,
    )
    email_webhook_secret: str = setting(
        "EMAIL_WEBHOOK_SECRET",
        "",
        "Signing secret (`whsec_…`) of the email provider's delivery webhook, `POST /api/webhooks/email` "
        "(Standard Webhooks / Svix); unset: that route answers 503",
        check=_webhook_secret,
        secret=True,
    )
    languages: str = setting(
        "LANGUAGES",
        "en,es,fr,de,pt-BR,ar",
        "The languages people may choose (`locale`), each with a catalog in core/text/locale/; adding one:"
        " docs/translations.md",
        check=_languages,
    )
    public_base_url: str = setting(
        "PUBLIC_BASE_URL",
        "",
        "This service's public origin: every link in email (`/claim/<token>`, `/check-in/<token>`,"
        " `/guardian/<token>`), SEP-7 callbacks and their `origin_domain` (docs/pages.md)",
        check=_exact_origin,
        shown_default="(required in production; dev: `http://localhost:$PORT`)",
        example="",
    )
    public_app_url: str = setting(
        "PUBLIC_APP_URL",
        "",
        "The owners' web client's origin, if one is deployed: emails name it only as where to sign in;"
        " unset, they name no sign-in address (docs/pages.md)",
        check=_http_origin,
        example="",
    )
    operator_name: str = setting(
        "OPERATOR_NAME",
        "",
        "Who runs this service (a person or an organisation), named in every email as who sends it;"
        " unset: emails name the service and its host only (docs/pages.md, Who sends an email)",
        check=_operator_name,
        example="",
    )
    operator_contact: str = setting(
        "OPERATOR_CONTACT",
        "",
        "Where the people the emails reach can write to the operator: an email address or an"
        " `https://` page, given in every email; unset: the emails name no contact",
        check=_operator_contact,
        example="",
    )
    uri_request_signing_seed: str = setting(
        "URI_REQUEST_SIGNING_SEED",
        "",
        "Stellar secret seed (`S…`) that signs SEP-7 requests; its public key is"
        " `URI_REQUEST_SIGNING_KEY` in `/.well-known/stellar.toml`",
        check=_secret_seed,
        secret=True,
        shown_default="(generated in dev)",
    )
    plan_min_check_in_interval_seconds: int = setting(
        "PLAN_MIN_CHECK_IN_INTERVAL_SECONDS",
        7 * 24 * 3600,
        "Shortest check-in interval an owner may choose (7 days); lower it for demos",
        minimum=1,
    )
    plan_min_cancel_window_seconds: int = setting(
        "PLAN_MIN_CANCEL_WINDOW_SECONDS",
        24 * 3600,
        "Shortest veto window after guardians approve (24 h); lower it for demos",
        minimum=0,
    )
    plan_min_verification_timeout_seconds: int = setting(
        "PLAN_MIN_VERIFICATION_TIMEOUT_SECONDS",
        7 * 24 * 3600,
        "Shortest verification deadline an owner may choose (7 days); lower it for demos",
        minimum=1,
    )
    plan_report_cooldown_seconds: int = setting(
        "PLAN_REPORT_COOLDOWN_SECONDS",
        24 * 3600,
        "After the owner's veto, how long before a guardian may report again (24 h; 429 until then)",
        minimum=0,
    )
    plan_default_verification_timeout_seconds: int = setting(
        "PLAN_DEFAULT_VERIFICATION_TIMEOUT_SECONDS",
        30 * 24 * 3600,
        "Verification deadline a new plan starts with (30 days; released then unless a contract is"
        " configured, when it waits); existing plans keep theirs",
        minimum=1,
    )
    plan_deadline_warning_seconds: int = setting(
        "PLAN_DEADLINE_WARNING_SECONDS",
        24 * 3600,
        "The owner's final warning comes at least this long before a verification deadline releases"
        " (1 day); after an outage the deadline moves so that it does",
        minimum=1,
    )
    plan_objection_check_in_seconds: int = setting(
        "PLAN_OBJECTION_CHECK_IN_SECONDS",
        14 * 24 * 3600,
        "How long a guardian's objection holds a verification deadline back while the owner is asked to"
        " check in (14 days, from the guardian's first objection in the round); then it lapses",
        minimum=1,
    )
    guardian_reconfirm_interval_seconds: int = setting(
        "GUARDIAN_RECONFIRM_INTERVAL_SECONDS",
        365 * 24 * 3600,
        "How long after a guardian accepted or last confirmed they are asked to confirm they can still"
        " act (365 days)",
        minimum=1,
    )
    guardian_reconfirm_grace_seconds: int = setting(
        "GUARDIAN_RECONFIRM_GRACE_SECONDS",
        30 * 24 * 3600,
        "How long a guardian has to confirm before the owner is told they are unresponsive (30 days)",
        minimum=1,
    )
    job_lease_seconds: int = setting(
        "JOB_LEASE_SECONDS",
        30,
        "How long a job's lease on its work (an archive item's verification, a relay, a deletion,"
        " a scrub or re-sealing run, a delivery's outbox rows) lasts unrenewed; the job renews it"
        " while it runs, and another job takes over the work of a killed one once it lapses",
        minimum=1,
    )
    lifecycle_scan_seconds: int = setting(
        "LIFECYCLE_SCAN_SECONDS",
        60,
        "How often the scheduler scans due plans and left-behind email",
        minimum=1,
    )
    service_contract_id: str = setting(
        "SERVICE_CONTRACT_ID",
        "",
        "Soroban contract (`C…`, checksum-checked); unset: transaction routes answer 503."
        " See [docs/soroban.md](soroban.md)",
        check=_contract_id,
    )
    soroban_rpc_url: str = setting(
        "SOROBAN_RPC_URL",
        "",
        "Soroban RPC node (`http(s)://`); required with `SERVICE_CONTRACT_ID`",
        check=_http_url,
    )
    soroban_rpc_timeout_seconds: int = setting(
        "SOROBAN_RPC_TIMEOUT_SECONDS",
        10,
        "Longest wait for one RPC call; past it, build routes answer 503 and the relay retries",
        minimum=1,
    )
    stellar_network_passphrase: str = setting(
        "STELLAR_NETWORK_PASSPHRASE", TESTNET_PASSPHRASE, "Stellar network the contract lives on"
    )
    arq_queue_name: str = setting(
        "ARQ_QUEUE_NAME", "arq:queue", "Job queue name (one per deployment sharing a Redis)"
    )

    @property
    def email_configured(self) -> bool:
        return bool(self.email_provider_api_key and self.email_provider_url)

    @property
    def dev_mailbox(self) -> bool:
        """Development without an email provider keeps every email under DATA_DIR/mail for
        `/dev/mail` (models/delivery/mailbox.py); production and tests never do."""
        return self.environment == "development" and not self.email_configured

    @property
    def uri_request_signing_key(self) -> Keypair:
        """The SEP-7 request signer (its public key is published in stellar.toml)."""
        return Keypair.from_secret(self.uri_request_signing_seed)

    @property
    def key_ring(self) -> KeyRing:
        if self.encryption_keys is None:
            raise ConfigError("ENCRYPTION_KEYS is not configured")
        return self.encryption_keys


# Read from the environment by a library (botocore's credential chain), not by Settings;
# declared here so docs/configuration.md's table and .env.example are checked for them too.
LIBRARY_VARIABLES = (
    Variable(
        "AWS_ACCESS_KEY_ID",
        "S3 / MinIO access key (read by botocore; unset: the standard AWS chain)",
        secret=True,
    ),
    Variable("AWS_SECRET_ACCESS_KEY", "S3 / MinIO secret key, set together with the key id", secret=True),
)


def _declared() -> list[tuple[str, type, Variable]]:
    hints = typing.get_type_hints(Settings)
    out = []
    for f in dataclasses.fields(Settings):
        kind = hints[f.name]
        if isinstance(kind, types.UnionType):  # `KeyRing | None`
            kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        out.append((f.name, kind, f.metadata[_VARIABLE]))
    return out


FIELDS = _declared()
VARIABLES: tuple[Variable, ...] = tuple(v for _, _, v in FIELDS) + LIBRARY_VARIABLES


def _parse(kind: type, var: Variable, raw: str) -> Any:
    """One variable's value from its text; raw is never echoed for secrets."""
    return _PARSERS.get(kind, _parse_text)(var, raw)


def _parse_int(var: Variable, raw: str) -> int:
    try:
        number = int(raw)
    except ValueError:
        shown = "" if var.secret else f", got {raw!r}"
        raise ConfigError(f"{var.name} must be an integer{shown}") from None
    if var.minimum is not None and number < var.minimum:
        raise ConfigError(f"{var.name} must be >= {var.minimum}, got {number}")
    if var.maximum is not None and number > var.maximum:
        raise ConfigError(f"{var.name} must be <= {var.maximum}, got {number}")
    return number


def _parse_path(var: Variable, raw: str) -> Path:
    return Path(raw).resolve()


def _parse_key_ring(var: Variable, raw: str) -> KeyRing:
    try:
        return KeyRing.parse(raw)
    except ValueError as exc:  # KeyRing's messages name ENCRYPTION_KEYS and never the key
        raise ConfigError(str(exc)) from None


def _parse_text(var: Variable, raw: str) -> str:
    text = raw if var.secret else raw.strip()
    if var.upper:
        text = text.upper()
    if var.choices and text not in var.choices:
        raise ConfigError(f"{var.name} must be one of {', '.join(var.choices)}, got {text!r}")
    problem = var.check(text) if var.check else None
    if problem:
        raise ConfigError(f"{var.name} {problem}")
    return text


# By the field's declared type; any other type is text.
_PARSERS: dict[type, Callable[[Variable, str], Any]] = {
    int: _parse_int,
    Path: _parse_path,
    KeyRing: _parse_key_ring,
}


_REQUIRED = {
    "JWT_SECRET": "at least 32 random bytes",
    "ENCRYPTION_KEYS": "id:base64key[,id:base64key...]",
    "URI_REQUEST_SIGNING_SEED": "a Stellar secret seed, S...; it signs SEP-7 requests",
}
_DEV_SECRET_MAKERS: dict[str, Callable[[], str]] = {
    "JWT_SECRET": lambda: secrets.token_urlsafe(48),
    "ENCRYPTION_KEYS": lambda: KeyRing.generate_entry("dev1"),
    "URI_REQUEST_SIGNING_SEED": lambda: Keypair.random().secret,
}


# The dev secrets this process generated (not read back from DATA_DIR): the dev runner logs
# their names, never their values.
GENERATED_IN_DEV: set[str] = set()


def _dev_secrets(data_dir: Path) -> dict[str, str]:
    """Generate once and persist the dev secrets, so restarts keep sessions, files and the SEP-7
    signer. A file from before a secret existed gets just that one added; a lock keeps the API and
    worker, starting together, from writing different values."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / "dev-secrets.json", os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        text = fh.read()
        values: dict[str, str] = json.loads(text) if text.strip() else {}
        missing = {name: make() for name, make in _DEV_SECRET_MAKERS.items() if name not in values}
        if missing:
            GENERATED_IN_DEV.update(missing)
            values.update(missing)
            fh.seek(0)
            fh.truncate()
            json.dump(values, fh)
            fh.flush()
            os.fsync(fh.fileno())
    return values


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from the environment; raise ConfigError naming the offending variable.

    An unset or empty variable takes its declared default. Outside production a missing
    JWT_SECRET, ENCRYPTION_KEYS or URI_REQUEST_SIGNING_SEED is generated once under DATA_DIR;
    production requires each, and PUBLIC_BASE_URL.
    """
    env = os.environ if env is None else env
    raw = {var.name: env.get(var.name, "") for _, _, var in FIELDS}
    values = _plain_values(raw)
    environment = values.get("environment", "development")
    values.update(_secret_values(raw, environment=environment, data_dir=values["data_dir"]))
    values["public_base_url"] = _public_base_url(values, environment=environment)
    # Unset: there is no web client, and no email names a place to sign in (docs/pages.md).
    values["public_app_url"] = values.get("public_app_url", "").rstrip("/")
    if values.get("service_contract_id") and not values.get("soroban_rpc_url"):
        raise ConfigError("SOROBAN_RPC_URL (http:// or https://) is required when SERVICE_CONTRACT_ID is set")
    return Settings(**values)


def _plain_values(raw: dict[str, str]) -> dict[str, Any]:
    """Every variable but the dev-generated secrets: parsed when set, paths defaulted."""
    values: dict[str, Any] = {}
    for attr, kind, var in FIELDS:
        if var.name in SECRETS_GENERATED_IN_DEV:
            continue  # parsed later, once APP_ENV and DATA_DIR say where they may come from
        if raw[var.name].strip():
            values[attr] = _parse(kind, var, raw[var.name])
        elif kind is Path:
            values[attr] = _parse(kind, var, str(declared_default(attr)))  # resolved against the cwd
    return values


def _secret_values(raw: dict[str, str], *, environment: str, data_dir: Path) -> dict[str, Any]:
    """The secrets outside production may be generated (once, under DATA_DIR); production
    requires each."""
    raw = dict(raw)
    if environment != "production" and not all(raw[name] for name in SECRETS_GENERATED_IN_DEV):
        dev = _dev_secrets(data_dir)
        for name in SECRETS_GENERATED_IN_DEV:
            raw[name] = raw[name] or dev[name]
    values: dict[str, Any] = {}
    for attr, kind, var in FIELDS:
        if var.name in SECRETS_GENERATED_IN_DEV:
            if not raw[var.name]:
                raise ConfigError(f"{var.name} is required in production ({_REQUIRED[var.name]})")
            values[attr] = _parse(kind, var, raw[var.name])
    return values


def _public_base_url(values: dict[str, Any], *, environment: str) -> str:
    if "public_base_url" in values:
        url: str = values["public_base_url"]
        return url.rstrip("/")
    if environment == "production":
        raise ConfigError(
            "PUBLIC_BASE_URL is required in production (this service's public origin, for every"
            " link in email and SEP-7 callbacks)"
        )
    return f"http://localhost:{values.get('port', declared_default('port'))}"


def declared_default(attr: str) -> Any:
    return next(f.default for f in dataclasses.fields(Settings) if f.name == attr)
