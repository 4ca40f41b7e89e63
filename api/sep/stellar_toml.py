"""`/.well-known/stellar.toml` (SEP-1): who signs this service's SEP-7 requests, on which network.

A wallet that receives a `web+stellar:` request naming `origin_domain=<this host>` fetches this
file and checks the request's signature against `URI_REQUEST_SIGNING_KEY`; only then may it show
the domain as the requester. SEP-1 has every wallet and web page read it from any origin, so it is
the one response with `Access-Control-Allow-Origin: *` (docs/security.md). docs/pages.md.
"""

from __future__ import annotations

import json

from aiohttp import web
from aiohttp_apigami import docs

from api.keys import context
from api.public import public

routes = web.RouteTableDef()

PATH = "/.well-known/stellar.toml"


def stellar_toml(*, network_passphrase: str, signing_key: str) -> str:
    """The file's text; JSON's string quoting is TOML's basic string for these ASCII values."""
    return (
        f"NETWORK_PASSPHRASE = {json.dumps(network_passphrase)}\n"
        f"URI_REQUEST_SIGNING_KEY = {json.dumps(signing_key)}\n"
    )


@routes.get(PATH)
@public
@docs(
    tags=["pages"],
    summary="SEP-1 stellar.toml: the network and the key that signs SEP-7 requests",
    description="`NETWORK_PASSPHRASE` and `URI_REQUEST_SIGNING_KEY` (the public key of "
    "`URI_REQUEST_SIGNING_SEED`), as `text/plain` with `Access-Control-Allow-Origin: *`, as SEP-1 "
    "requires: wallets verify each `web+stellar:` request's signature against it.",
    produces=["text/plain"],
    responses={200: {"description": "The TOML file"}},
)
async def stellar_toml_file(request: web.Request) -> web.Response:
    ctx = context(request)
    settings = ctx.settings
    text = stellar_toml(
        network_passphrase=settings.stellar_network_passphrase,
        signing_key=settings.uri_request_signing_key.public_key,
    )
    return web.Response(
        text=text,
        content_type="text/plain",
        charset="utf-8",
        headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "public, max-age=3600"},
    )
