"""SEP-1: /.well-known/stellar.toml names the network and the key that signs SEP-7 requests,
readable from any origin (the one exception to the exact-origin CORS rule, docs/security.md)."""

from __future__ import annotations

import tomllib

from stellar_sdk import Keypair


async def test_stellar_toml_publishes_the_network_and_the_uri_request_signing_key(client, settings):
    resp = await client.get("/.well-known/stellar.toml")
    assert resp.status == 200
    assert resp.content_type == "text/plain"
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    toml = tomllib.loads(await resp.text())
    assert toml == {
        "NETWORK_PASSPHRASE": settings.stellar_network_passphrase,
        "URI_REQUEST_SIGNING_KEY": Keypair.from_secret(settings.uri_request_signing_seed).public_key,
    }
    assert settings.uri_request_signing_seed not in await resp.text()


async def test_stellar_toml_keeps_its_star_when_cors_origins_are_configured(make_client):
    client = await make_client(cors_allowed_origins="https://app.example.test")
    for origin in ("https://app.example.test", "https://wallet.example.net"):
        resp = await client.get("/.well-known/stellar.toml", headers={"Origin": origin})
        assert resp.status == 200
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
    # Everything else still answers only the configured origin.
    resp = await client.get("/api/health", headers={"Origin": "https://wallet.example.net"})
    assert "Access-Control-Allow-Origin" not in resp.headers
