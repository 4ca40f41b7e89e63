"""Exports a person can open: every entry name is safe on Windows, macOS and Linux (one rule,
core.files.zipstream.safe_name), unique in the zip, and each zip opens with a plain README.txt
saying whose plan it is, what is inside and, for an heir, their share of each asset in words."""

from __future__ import annotations

import io
import zipfile

import pytest

from core.files.zipstream import MAX_NAME_BYTES, Member, in_memory, safe_name, zip_stream
from tests.capsule_helpers import Family
from tests.plan_helpers import create
from tests.support.capsule import check_manifest, owner_export, read_zip

# Windows' reserved device names, with and without an extension, in any case.
RESERVED = [
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{n}" for n in range(1, 10)),
    *(f"LPT{n}" for n in range(1, 10)),
]


@pytest.mark.parametrize("device", RESERVED)
def test_reserved_device_names_are_altered_in_any_case_with_any_extension(device):
    for name in (device, device.lower(), device.capitalize(), f"{device}.txt", f"{device.lower()}.tar.gz"):
        safe = safe_name(name)
        assert safe != name and safe.split(".")[0].upper() == f"{device}_", (name, safe)
    assert safe_name(f"{device}X.txt") == f"{device}X.txt"  # only the exact device name is reserved


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("001 Mum/Dad.txt", "001 Mum-Dad.txt"),  # the title stays whole, its order prefix kept
        ("002 C:\\Users\\me.txt", "002 C_-Users-me.txt"),
        ('a<b>c"d|e?f*g.txt', "a_b_c_d-e_f_g.txt"),
        ("report. . .", "report"),  # Windows drops trailing dots and spaces: so do we
        ("notes.txt  ", "notes.txt"),
        ("..", "file"),
        (".hidden", "hidden"),  # nothing hidden on macOS or Linux
        ("tab\there\r\nline.txt", "tab here line.txt"),
        ("bell\x07\x1b\x9b.txt", "bell___.txt"),
        ("in\u200bvisi\u200dble\ufeff.txt", "invisible.txt"),
        ("evil\u202egnp.exe", "evilgnp.exe"),  # a right-to-left override no longer disguises it
        ("iso\u2066late\u2069d.txt", "isolated.txt"),
        ("no\u00a0break\u3000space.txt", "no break space.txt"),
        ("\u3164\u115f", "file"),  # fillers that render as nothing
        ("cafe\u0301.txt", "caf\u00e9.txt"),  # NFC
        ("Brief an Oma.pdf", "Brief an Oma.pdf"),
        ("", "file"),
    ],
)
def test_names_are_made_safe_and_read_as_written(name, expected):
    assert safe_name(name) == expected
    assert safe_name(expected) == expected  # safe names are left alone


def test_long_names_are_cut_in_bytes_keeping_the_extension():
    for name in ("x" * 300 + ".pdf", "\u00e9" * 300 + ".pdf", "\U0001f600" * 100 + ".jpeg"):
        safe = safe_name(name)
        assert len(safe.encode()) <= MAX_NAME_BYTES and safe.endswith((".pdf", ".jpeg")), safe
        safe.encode().decode()  # cut between characters


async def _zip(paths: list[str]) -> zipfile.ZipFile:
    from datetime import UTC, datetime

    now = datetime(2026, 11, 27, tzinfo=UTC)
    members = [Member(path=p, modified=now, open=in_memory(b"x")) for p in paths]
    data = b"".join([chunk async for chunk in zip_stream(members)])
    return zipfile.ZipFile(io.BytesIO(data))


async def test_the_zip_writer_refuses_an_unsafe_or_repeated_name():
    archive = await _zip(["README.txt", "letters/001 Mum-Dad.txt", "documents/CON_.txt"])
    assert archive.namelist()[:-1] == ["README.txt", "letters/001 Mum-Dad.txt", "documents/CON_.txt"]
    for paths in (["documents/CON.txt"], ["a/b:c.txt"], ["a.txt", "A.TXT"], ["manifest.json"], ["a/../b"]):
        with pytest.raises(ValueError):
            await _zip(paths)


async def test_the_owners_export_has_safe_unique_names_and_a_readme(fam: Family):
    await fam.add_heir("Ada", 100)
    for name in ("CON.txt", "con.TXT", "aux", "Lpt9.tar.gz", "nul.txt", "report...", "zero\u200bwidth.txt"):
        await fam.document(name.encode(), filename=name, content_type="text/plain", title=name)
    await fam.vault.work()
    await fam.message("For both of you.", title="Mum/Dad")
    await fam.message("A reserved title.", title="CON")
    await fam.message("Slashes and more.", title="01/05/2024: <what> I meant?")
    await create(fam.client, fam.owner, "assets", label="Savings account", amount="25000", assetCode=None)

    archive, _ = await read_zip(await owner_export(fam))
    check_manifest(archive)
    names = archive.namelist()
    assert names[0] == "README.txt" and names[-1] == "manifest.json"
    assert len({n.casefold() for n in names}) == len(names)  # unique, even on a case-insensitive disk
    for name in names:
        for part in name.split("/"):
            assert safe_name(part) == part, name
    assert {n for n in names if n.startswith("archive/")} == {
        "archive/CON_.txt",
        "archive/con_ (2).TXT",
        "archive/aux_",
        "archive/Lpt9_.tar.gz",
        "archive/nul_.txt",
        "archive/report",
        "archive/zerowidth.txt",
    }
    assert archive.read("archive/con_ (2).TXT") == b"con.TXT"
    letters = sorted(n for n in names if n.startswith("messages/"))
    assert letters == [
        "messages/001 Mum-Dad.txt",
        "messages/002 CON.txt",
        "messages/003 01-05-2024_ _what_ I meant_.txt",
    ]

    readme = archive.read("README.txt").decode()
    assert "\r\n" in readme and "\n" not in readme.replace("\r\n", "")
    lines = readme.splitlines()
    assert lines[0] == "Olive Owner's legacy plan"
    assert "- messages/: your 3 letters, as text files, numbered in the order you wrote them" in readme
    assert "- archive/: the 7 files you stored, as you uploaded them." in readme
    assert "1 beneficiary (without their private links)" in readme and "1 asset" in readme
    for entry in ("README.txt", "plan.json", "timeline.json", "manifest.json"):
        assert f"- {entry}: " in readme


async def test_a_readme_lists_only_the_folders_its_zip_has(fam: Family):
    """No "archive/: the 0 files you stored" for a folder that is not in the zip."""
    ada = await fam.add_heir("Ada", 100)
    archive, _ = await read_zip(await owner_export(fam))
    readme = archive.read("README.txt").decode()
    assert not [n for n in archive.namelist() if "/" in n]
    assert "messages/" not in readme and "archive/" not in readme and "- plan.json: " in readme
    await fam.release()
    archive, _ = await read_zip(await fam.open(ada["claimToken"], "/export"))
    readme = archive.read("README.txt").decode()
    assert not [n for n in archive.namelist() if "/" in n]
    assert "letters/" not in readme and "documents/" not in readme and "- capsule.json: " in readme


async def test_the_heirs_export_opens_with_a_readme_of_their_shares_in_words(fam: Family):
    ada = await fam.add_heir("Ada", 60)
    await fam.add_heir("Ben", 40)
    await create(fam.client, fam.owner, "assets", label="Savings account", amount="25000", assetCode=None)
    await create(
        fam.client,
        fam.owner,
        "assets",
        label="Lumens",
        amount="10",
        assetCode="XLM",
        description="In the hardware wallet in the desk.",
        audience={"beneficiaryIds": [ada["id"]]},
    )
    await fam.message("Hello Ada", title="For Ada/with love", to=[ada])
    await fam.message("Later", title="Your wedding day", rule=("after_release", 400))
    await fam.document(b"deed", filename="NUL", content_type="text/plain", title="The deed")
    await fam.release()

    resp = await fam.open(ada["claimToken"], "/export")
    archive, _ = await read_zip(resp)
    check_manifest(archive)
    names = archive.namelist()
    assert names[0] == "README.txt"
    assert "letters/001 For Ada-with love.txt" in names and "documents/NUL_" in names
    readme = archive.read("README.txt").decode()
    text = " ".join(readme.split())
    assert readme.splitlines()[0] == "From Olive Owner, for Ada"
    assert (
        "\r\n- Savings account\r\n  Your share: 15000, which is 60\u00a0% of the whole 25000.\r\n" in readme
    )
    assert "- Lumens All of it is yours: 10 XLM. In the hardware wallet in the desk." in text
    assert "Olive Owner named you, Ada (daughter), as a beneficiary with 60 % of the plan." in text
    assert (
        "- letters/: 1 letter, as a text file, numbered" in text
        and "- documents/: 1 document, under its own name." in text
    )
    assert "Still to come - Your wedding day: opens on " in text
    assert "Olive Owner asked for this letter to open later." in text
    assert "Later" not in readme.replace("later", "")  # a sealed letter's text is never in it
