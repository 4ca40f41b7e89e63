"""The owner's rehearsal of an heir's page (/plan/heirs/<id>/preview), through the app: the heir's
own page in the heir's language, marked as a preview in the owner's, never the claim token, its
downloads the owner's own; and, taken before the release, the same letters, documents and shares
as the heir's page after it (the lifecycle run to Released through the real routes and worker)."""

from __future__ import annotations

import re
from typing import Any

from tests.capsule_helpers import Family
from tests.plan_helpers import create
from tests.support.owner import browse_as_the_service, owner_in, sign_in_page
from tests.support.words import visible_text

SECTIONS = ("letters", "later", "documents", "assets", "share")


def sections(page: str, base: str) -> dict[str, str]:
    """Each section of the heir's page in words, its links' base named alike."""
    found = {}
    for name in SECTIONS:
        match = re.search(rf'<section aria-labelledby="{name}">(.*?)</section>', page, re.S)
        assert match, f"no section {name}"
        found[name] = visible_text(match.group(1).replace(base, "BASE"))
    return found


async def _family_plan(fam: Family) -> tuple[dict[str, Any], dict[str, Any]]:
    ada = await create(
        fam.client,
        fam.owner,
        "beneficiaries",
        name="Ada",
        email="ada@example.org",
        allocationPercentage=60,
        locale="pt-BR",
        timeZone="America/Sao_Paulo",
    )
    ben = await create(
        fam.client, fam.owner, "beneficiaries", name="Ben", email="ben@example.org", allocationPercentage=40
    )
    fam.heirs += [ada, ben]
    await create(fam.client, fam.owner, "assets", label="Savings", amount="1250.50", assetCode="XLM")
    await create(
        fam.client,
        fam.owner,
        "assets",
        label="Ben's bike",
        amount="1",
        audience={"beneficiaryIds": [ben["id"]]},
    )
    await fam.message("Dear Ada, the key is under the blue pot.", title="The key")
    await fam.message("Not yet.", title="For your wedding day", rule=("on_date", "2040-06-01"))
    will = await fam.document(
        b"%PDF-1.7 will",
        filename="will.pdf",
        content_type="application/pdf",
        title="My will",
        category="legal",
    )
    await fam.vault.work()
    return ada, will


async def test_the_preview_before_the_release_is_the_heirs_page_after_it(fam: Family) -> None:
    ada, will = await _family_plan(fam)
    await sign_in_page(fam.client, fam.owner.keypair)
    path = f"/plan/heirs/{ada['id']}/preview"
    resp = await fam.client.get(path, allow_redirects=False)
    preview = await resp.text()
    assert resp.status == 200, preview
    # The heir's language, the owner's marks, never the token.
    assert '<html lang="pt-BR"' in preview
    assert preview.count('class="preview-mark" role="note"') == 2
    assert 'lang="en" dir="ltr">\n<p><strong>Preview: this is not the real page.</strong>' in preview
    assert "<title>Preview: " in preview
    assert ada["claimToken"] not in preview and "/claim/" not in preview
    # Its downloads are the owner's own.
    assert f'href="{path}/documents/{will["id"]}/download"' in preview
    download = await fam.client.get(f"{path}/documents/{will['id']}/download")
    assert download.status == 200 and await download.read() == b"%PDF-1.7 will"
    rehearsed = sections(preview, path)
    assert "The key" in rehearsed["letters"] and "blue pot" in rehearsed["letters"]
    assert "For your wedding day" in rehearsed["later"] and "Not yet." not in preview
    assert "Ben's bike" not in preview and "Savings" in rehearsed["assets"]
    # The release, then the heir's own page: the same letters, documents and shares.
    await fam.release()
    fam.client.session.cookie_jar.clear()
    token = ada["claimToken"]
    resp = await fam.client.get(f"/claim/{token}")
    real = await resp.text()
    assert resp.status == 200, real
    assert "preview-mark" not in real
    assert sections(real, f"/api/claim/{token}") == rehearsed


async def test_another_owners_heir_is_a_404_and_a_signed_out_preview_asks_to_sign_in(fam: Family) -> None:
    ada, _ = await _family_plan(fam)
    browse_as_the_service(fam.client)
    resp = await fam.client.get(f"/plan/heirs/{ada['id']}/preview", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"].startswith("/sign-in")
    other = await owner_in(fam.client)
    await other.page(f"/plan/heirs/{ada['id']}/preview", status=404)
    await other.page("/plan/heirs/not-an-id/preview", status=404)


async def test_a_letters_photo_in_the_rehearsal_is_the_owners_own_file(fam: Family) -> None:
    ada, _ = await _family_plan(fam)
    photo = await fam.vault.upload_ok(
        b"\x89PNG fake", filename="p.png", content_type="image/png", type="photo"
    )
    await fam.vault.work()
    letter = await fam.message("Look at us.", title="Summer", mediaId=photo["id"])
    await sign_in_page(fam.client, fam.owner.keypair)
    path = f"/plan/heirs/{ada['id']}/preview"
    resp = await fam.client.get(path)
    assert resp.status == 200
    src = f"{path}/messages/{letter['id']}/media"
    assert f'<img src="{src}"' in await resp.text()
    media = await fam.client.get(src)
    assert media.status == 200 and await media.read() == b"\x89PNG fake"
    assert media.headers["Content-Disposition"].startswith("inline")
    # "Download everything" leads to the account page's export button (a GET changes nothing).
    resp = await fam.client.get(f"{path}/export", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/plan/account#export"
