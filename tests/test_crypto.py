"""Tests for core.files.crypto: the archive stream format, the key ring and sealed secrets."""

from __future__ import annotations

import base64
import hashlib
import os
import random
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

import core.files.crypto as crypto
from core.files.crypto import (
    SEGMENT_SIZE,
    IntegrityError,
    KeyRing,
    StreamDecryptor,
    StreamEncryptor,
    UnknownKeyError,
    ciphertext_size,
    decrypt_stream,
    final_segment_span,
    new_data_key,
    open_final_segment,
)

S = SEGMENT_SIZE
HEADER = 8
TAG = 16
CT_SEG = S + TAG
OBJECT_ID = "doc-1234"
MIB = 1024 * 1024


# ---------------------------------------------------------------- helpers


def chunker(strategy: str, seed: int = 0) -> Callable[[bytes], Iterator[bytes]]:
    def split(data: bytes) -> Iterator[bytes]:
        rng = random.Random(seed)
        pos = 0
        while pos < len(data):
            if strategy == "random":
                size = rng.choice([1, 7, 999, S - 1, S, S + 1, rng.randint(1, 3 * S)])
            else:
                size = {"1": 1, "1000": 1000, "1MiB": MIB, "whole": max(len(data), 1)}[strategy]
            yield data[pos : pos + size]
            pos += size

    return split


def encrypt(data: bytes, key: bytes, object_id: str = OBJECT_ID, strategy: str = "whole") -> bytes:
    enc = StreamEncryptor(key, object_id)
    out = bytearray()
    for piece in chunker(strategy)(data):
        out += enc.update(piece)
    out += enc.finalize()
    return bytes(out)


def decrypt(ct: bytes, key: bytes, object_id: str = OBJECT_ID, strategy: str = "whole") -> bytes:
    dec = StreamDecryptor(key, object_id)
    out = bytearray()
    for piece in chunker(strategy, seed=1)(ct):
        out += dec.update(piece)
    out += dec.finalize()
    return bytes(out)


def segment(ct: bytes, i: int) -> bytes:
    return ct[HEADER + i * CT_SEG : HEADER + (i + 1) * CT_SEG]


def flip(ct: bytes, index: int) -> bytes:
    b = bytearray(ct)
    b[index] ^= 0x01
    return bytes(b)


async def aiter_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for c in chunks:
        yield c


async def collect(stream: AsyncIterator[bytes]) -> bytes:
    out = bytearray()
    async for piece in stream:
        out += piece
    return bytes(out)


@pytest.fixture(scope="module")
def key() -> bytes:
    return new_data_key()


# ---------------------------------------------------------------- round trips

SIZES = [0, 1, S - 1, S, S + 1, 3 * S, 20 * MIB]
STRATEGIES = ["1", "1000", "1MiB", "random"]
# 20 MiB fed one byte at a time means 40M Python calls; the 1-byte path is covered by the
# smaller sizes, which cross every segment-boundary case.
ROUND_TRIPS = [(n, s) for n in SIZES for s in STRATEGIES if not (n > 3 * S and s == "1")]


@pytest.mark.parametrize(("size", "strategy"), ROUND_TRIPS)
def test_round_trip(size: int, strategy: str, key: bytes) -> None:
    data = os.urandom(size)
    ct = encrypt(data, key, strategy=strategy)
    assert len(ct) == ciphertext_size(size)
    assert decrypt(ct, key, strategy=strategy) == data


@pytest.mark.parametrize("size", [0, 1, S, 3 * S + 5])
async def test_async_round_trip(size: int, key: bytes) -> None:
    data = os.urandom(size)
    ct = encrypt(data, key, strategy="random")
    pt = await collect(decrypt_stream(key, OBJECT_ID, aiter_chunks(chunker("1000")(ct))))
    assert pt == data


async def test_async_large_single_chunk_is_yielded_in_bounded_pieces(key: bytes) -> None:
    data = os.urandom(20 * MIB)
    pt_pieces = [p async for p in decrypt_stream(key, OBJECT_ID, aiter_chunks(iter([encrypt(data, key)])))]
    assert max(len(p) for p in pt_pieces) <= 17 * S
    assert b"".join(pt_pieces) == data


async def encrypting(key: bytes, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """What the upload path does with StreamEncryptor, as an async stream."""
    enc = StreamEncryptor(key, OBJECT_ID)
    async for chunk in chunks:
        if out := enc.update(chunk):
            yield out
    yield enc.finalize()


async def test_async_streams_keep_memory_flat(key: bytes) -> None:
    total = 48 * MIB
    block = os.urandom(MIB)

    async def source() -> AsyncIterator[bytes]:
        for _ in range(total // MIB):
            yield block

    digest = hashlib.sha256()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        async for piece in decrypt_stream(key, OBJECT_ID, encrypting(key, source())):
            digest.update(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest.digest() == hashlib.sha256(block * (total // MIB)).digest()
    assert peak < 8 * MIB


def test_encryptor_emits_only_complete_segments_with_header_first(key: bytes) -> None:
    data = os.urandom(2 * S - 1)
    enc = StreamEncryptor(key, OBJECT_ID)
    assert enc.update(data[: S - 1]) == b""
    first = enc.update(data[S - 1 : S + 1])
    assert len(first) == HEADER + CT_SEG  # header rides along with segment 0
    assert first[0] == 0x01
    assert enc.update(data[S + 1 :]) == b""  # S - 1 bytes buffered: never a full segment
    tail = enc.finalize()
    assert len(tail) == CT_SEG - 1
    assert decrypt(first + tail, key) == data


def test_plaintext_multiple_of_segment_size_ends_with_empty_final_segment(key: bytes) -> None:
    enc = StreamEncryptor(key, OBJECT_ID)
    body = enc.update(b"x" * (2 * S))
    tail = enc.finalize()
    assert len(body) == HEADER + 2 * CT_SEG
    assert len(tail) == TAG
    assert decrypt(body + tail, key) == b"x" * (2 * S)


def test_empty_plaintext_is_header_plus_empty_final_segment(key: bytes) -> None:
    enc = StreamEncryptor(key, OBJECT_ID)
    ct = enc.update(b"") + enc.finalize()
    assert len(ct) == HEADER + TAG == ciphertext_size(0)
    assert decrypt(ct, key) == b""


def test_decryptor_holds_back_a_full_segment_until_more_data(key: bytes) -> None:
    data = os.urandom(S + 10)
    ct = encrypt(data, key)
    dec = StreamDecryptor(key, OBJECT_ID)
    assert dec.update(ct[: HEADER + CT_SEG]) == b""
    assert dec.update(ct[HEADER + CT_SEG : HEADER + CT_SEG + 1]) == data[:S]
    assert dec.update(ct[HEADER + CT_SEG + 1 :]) == b""
    assert dec.finalize() == data[S:]


def _manual_stream(key: bytes, prefix: bytes, segments: list[tuple[bytes, int]]) -> bytes:
    """Builds a stream straight from the documented format, independent of core.files.crypto."""
    aead = AESGCM(key)
    aad = b"legacy-planning/archive/v1|" + OBJECT_ID.encode()
    out = bytearray(b"\x01" + prefix)
    for i, (plain, last) in enumerate(segments):
        out += aead.encrypt(prefix + i.to_bytes(4, "big") + bytes([last]), plain, aad)
    return bytes(out)


def test_wire_format_matches_documented_layout(monkeypatch: pytest.MonkeyPatch, key: bytes) -> None:
    data = os.urandom(2 * S + 5)
    prefix = bytes(range(1, 8))
    monkeypatch.setattr(crypto.os, "urandom", lambda n: prefix[:n])
    expected = _manual_stream(key, prefix, [(data[:S], 0), (data[S : 2 * S], 0), (data[2 * S :], 1)])
    assert encrypt(data, key, strategy="random") == expected


def test_final_segment_must_carry_the_last_flag(key: bytes) -> None:
    prefix = os.urandom(7)
    good = _manual_stream(key, prefix, [(b"a" * S, 0), (b"tail", 1)])
    assert decrypt(good, key) == b"a" * S + b"tail"
    unflagged = _manual_stream(key, prefix, [(b"a" * S, 0), (b"tail", 0)])
    with pytest.raises(IntegrityError):
        decrypt(unflagged, key)
    early_flag = _manual_stream(key, prefix, [(b"a" * S, 1), (b"tail", 1)])
    with pytest.raises(IntegrityError):
        decrypt(early_flag, key)
    full_final = _manual_stream(key, prefix, [(b"a" * S, 0), (b"b" * S, 1)])
    with pytest.raises(IntegrityError):
        decrypt(full_final, key)


def test_ciphertexts_are_randomized(key: bytes) -> None:
    data = b"same plaintext"
    assert encrypt(data, key) != encrypt(data, key)


def test_accepts_bytearray_and_memoryview(key: bytes) -> None:
    data = os.urandom(S + 3)
    enc = StreamEncryptor(key, OBJECT_ID)
    ct = enc.update(bytearray(data[:5])) + enc.update(memoryview(data)[5:]) + enc.finalize()
    dec = StreamDecryptor(key, OBJECT_ID)
    assert dec.update(memoryview(ct)) + dec.finalize() == data


@pytest.mark.parametrize("size", [0, 1, S - 1, S, S + 1, 3 * S, 20 * MIB, 10**12])
def test_ciphertext_size_formula(size: int) -> None:
    full, rest = divmod(size, S)
    assert ciphertext_size(size) == HEADER + full * CT_SEG + rest + TAG


def test_ciphertext_size_rejects_negative_and_oversized() -> None:
    with pytest.raises(ValueError):
        ciphertext_size(-1)
    with pytest.raises(ValueError):
        ciphertext_size(2**32 * S)
    assert ciphertext_size(2**32 * S - 1) > 0


def test_counter_overflow_raises(monkeypatch: pytest.MonkeyPatch, key: bytes) -> None:
    monkeypatch.setattr(crypto, "_MAX_SEGMENTS", 3)
    enc = StreamEncryptor(key, OBJECT_ID)
    ct = enc.update(b"z" * (2 * S)) + enc.finalize()  # exactly 3 segments: allowed
    assert decrypt(ct, key) == b"z" * (2 * S)
    enc = StreamEncryptor(key, OBJECT_ID)
    with pytest.raises(OverflowError):
        enc.update(b"z" * (3 * S)) + enc.finalize()


def test_use_after_finalize_is_refused(key: bytes) -> None:
    enc = StreamEncryptor(key, OBJECT_ID)
    ct = enc.finalize()
    with pytest.raises(RuntimeError):
        enc.update(b"more")
    with pytest.raises(RuntimeError):
        enc.finalize()
    dec = StreamDecryptor(key, OBJECT_ID)
    dec.update(ct)
    assert dec.finalize() == b""
    with pytest.raises(RuntimeError):
        dec.update(b"")


def test_rejects_bad_data_key_length_and_empty_object_id(key: bytes) -> None:
    with pytest.raises(ValueError):
        StreamEncryptor(key[:16], OBJECT_ID)
    with pytest.raises(ValueError):
        StreamDecryptor(key + b"x", OBJECT_ID)
    with pytest.raises(ValueError):
        StreamEncryptor(key, "")


# ---------------------------------------------------------------- tampering

# 3 full segments and a 100-byte final segment.
TAMPER_PLAINTEXT_SIZE = 3 * S + 100
FINAL_START = HEADER + 3 * CT_SEG

TAMPERS: dict[str, Callable[[bytes], bytes]] = {
    "empty stream": lambda ct: b"",
    "partial header": lambda ct: ct[:5],
    "header only": lambda ct: ct[:HEADER],
    "unknown version byte": lambda ct: bytes([0x02]) + ct[1:],
    "flip header nonce prefix": lambda ct: flip(ct, 3),
    "flip first segment body": lambda ct: flip(ct, HEADER + 100),
    "flip first segment tag": lambda ct: flip(ct, HEADER + CT_SEG - 1),
    "flip final segment body": lambda ct: flip(ct, FINAL_START + 5),
    "flip final segment tag": lambda ct: flip(ct, len(ct) - 1),
    "truncate at boundary (drop final segment)": lambda ct: ct[:FINAL_START],
    "truncate at earlier boundary": lambda ct: ct[: HEADER + CT_SEG],
    "truncate mid segment": lambda ct: ct[: HEADER + CT_SEG + 1000],
    "truncate inside final segment": lambda ct: ct[:-1],
    "truncate inside final tag": lambda ct: ct[: FINAL_START + 10],
    "drop middle segment": lambda ct: ct[: HEADER + CT_SEG] + ct[HEADER + 2 * CT_SEG :],
    "swap two segments": lambda ct: ct[:HEADER] + segment(ct, 1) + segment(ct, 0) + ct[HEADER + 2 * CT_SEG :],
    "duplicate a segment": lambda ct: ct[: HEADER + CT_SEG] + segment(ct, 0) + ct[HEADER + CT_SEG :],
    "append one garbage byte": lambda ct: ct + b"\x00",
    "append a garbage block": lambda ct: ct + os.urandom(CT_SEG + 5),
    "append a copy of the final segment": lambda ct: ct + ct[FINAL_START:],
}


@pytest.fixture(scope="module")
def tamper_sample(key: bytes) -> tuple[bytes, bytes]:
    data = os.urandom(TAMPER_PLAINTEXT_SIZE)
    ct = encrypt(data, key)
    assert len(ct) == FINAL_START + 100 + TAG
    return data, ct


@pytest.mark.parametrize("strategy", ["whole", "1000", "random"])
@pytest.mark.parametrize("name", list(TAMPERS))
def test_tampering_is_rejected(
    name: str, strategy: str, key: bytes, tamper_sample: tuple[bytes, bytes]
) -> None:
    _, ct = tamper_sample
    bad = TAMPERS[name](ct)
    assert bad != ct
    with pytest.raises(IntegrityError):
        decrypt(bad, key, strategy=strategy)


def test_untampered_sample_decrypts(key: bytes, tamper_sample: tuple[bytes, bytes]) -> None:
    data, ct = tamper_sample
    assert decrypt(ct, key, strategy="random") == data


def test_truncated_empty_final_segment_is_rejected(key: bytes) -> None:
    ct = encrypt(b"y" * (2 * S), key)
    assert decrypt(ct, key) == b"y" * (2 * S)
    with pytest.raises(IntegrityError):
        decrypt(ct[:-TAG], key)  # cut exactly on the boundary of the last full segment
    with pytest.raises(IntegrityError):
        decrypt(ct[:-1], key)


def test_final_segment_cannot_be_dropped_for_empty_plaintext(key: bytes) -> None:
    ct = encrypt(b"", key)
    with pytest.raises(IntegrityError):
        decrypt(ct[:HEADER], key)


def test_splicing_between_objects_with_same_key_is_rejected(key: bytes) -> None:
    a = encrypt(os.urandom(2 * S + 1), key, object_id="a")
    b = encrypt(os.urandom(2 * S + 1), key, object_id="a")
    spliced = a[: HEADER + CT_SEG] + b[HEADER + CT_SEG :]
    with pytest.raises(IntegrityError):
        decrypt(spliced, key, object_id="a")


def test_wrong_object_id_is_rejected(key: bytes, tamper_sample: tuple[bytes, bytes]) -> None:
    _, ct = tamper_sample
    with pytest.raises(IntegrityError):
        decrypt(ct, key, object_id=OBJECT_ID + "x")


def test_wrong_data_key_is_rejected(tamper_sample: tuple[bytes, bytes]) -> None:
    _, ct = tamper_sample
    with pytest.raises(IntegrityError):
        decrypt(ct, new_data_key())


def test_integrity_error_messages_carry_no_plaintext(key: bytes) -> None:
    secret = b"TOP-SECRET-WILL-TEXT" * 10
    ct = encrypt(secret, key)
    with pytest.raises(IntegrityError) as info:
        decrypt(flip(ct, HEADER + 3), key)
    assert "TOP-SECRET" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize("bad_segment", [0, 2, 3])
def test_decryptor_yields_nothing_from_a_failing_segment(
    bad_segment: int, key: bytes, tamper_sample: tuple[bytes, bytes]
) -> None:
    data, ct = tamper_sample
    bad = flip(ct, HEADER + bad_segment * CT_SEG + 7)
    dec = StreamDecryptor(key, OBJECT_ID)
    released = bytearray()
    with pytest.raises(IntegrityError):
        for piece in chunker("1000")(bad):
            released += dec.update(piece)
        released += dec.finalize()
    # Exactly the segments before the bad one, none of the bad one's bytes.
    assert bytes(released) == data[: bad_segment * S]
    with pytest.raises(RuntimeError):
        dec.update(b"")  # a failed decryptor is poisoned


async def test_decrypt_stream_yields_only_authenticated_prefix(
    key: bytes, tamper_sample: tuple[bytes, bytes]
) -> None:
    data, ct = tamper_sample
    bad = flip(ct, HEADER + 2 * CT_SEG + 7)
    released = bytearray()
    with pytest.raises(IntegrityError):
        async for piece in decrypt_stream(key, OBJECT_ID, aiter_chunks(chunker("1000")(bad))):
            released += piece
    assert bytes(released) == data[: 2 * S]


async def test_decrypt_stream_rejects_truncation(key: bytes, tamper_sample: tuple[bytes, bytes]) -> None:
    data, ct = tamper_sample
    released = bytearray()
    with pytest.raises(IntegrityError):
        async for piece in decrypt_stream(key, OBJECT_ID, aiter_chunks(iter([ct[:FINAL_START]]))):
            released += piece
    assert len(released) <= 3 * S
    assert bytes(released) == data[: len(released)]


# ---------------------------------------------------------------- key ring


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


K1, K2, K3 = os.urandom(32), os.urandom(32), os.urandom(32)


def ring(*entries: tuple[str, bytes]) -> KeyRing:
    return KeyRing.parse(",".join(f"{i}:{b64(k)}" for i, k in entries))


def test_parse_orders_keys_with_primary_first() -> None:
    kr = ring(("new", K2), ("old", K1))
    assert kr.primary_id == "new"
    assert kr.key_ids == ["new", "old"]


def test_parse_accepts_urlsafe_unpadded_and_whitespace() -> None:
    urlsafe = base64.urlsafe_b64encode(K1).decode().rstrip("=")
    kr = KeyRing.parse(f" a : {urlsafe} ,\n b:{b64(K2)} ")
    assert kr.key_ids == ["a", "b"]
    assert kr.subkey("a", "p") == ring(("a", K1)).subkey("a", "p")


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (f"k1:{b64(K1)},", "entry 2"),
        (f"{b64(K1)}", "':'"),
        ("k1:!!!not-base64-at-all!!!", "base64"),
        (f"k1:{b64(K1)[:-4]}####", "base64"),
        (f"k1:{b64(K1[:16])}", "32 bytes"),
        (f"k1:{b64(K1 + b'x')}", "32 bytes"),
        (f"k1:{b64(K1)},k1:{b64(K2)}", "duplicate"),
        (f"bad id:{b64(K1)}", "key id"),
        (f"{'x' * 33}:{b64(K1)}", "key id"),
        (f":{b64(K1)}", "key id"),
        (f"k.1:{b64(K1)}", "key id"),
    ],
    # The keys are random: ids that name the case let parallel workers collect the same tests.
    ids=[
        "empty",
        "blank",
        "trailing-comma",
        "no-id",
        "not-base64",
        "bad-base64-tail",
        "short-key",
        "long-key",
        "duplicate-id",
        "space-in-id",
        "long-id",
        "empty-id",
        "dot-in-id",
    ],
)
def test_parse_errors_are_clear_and_never_echo_key_material(value: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        KeyRing.parse(value)
    message = str(info.value)
    assert "ENCRYPTION_KEYS" in message
    assert fragment in message
    for k in (K1, K2):
        assert b64(k)[:12] not in message
        assert b64(k[:16])[:12] not in message
        assert repr(k)[2:14] not in message
    assert "not-base64" not in message


def test_constructor_validates_too() -> None:
    with pytest.raises(ValueError):
        KeyRing([])
    with pytest.raises(ValueError):
        KeyRing([("k1", K1[:31])])
    with pytest.raises(ValueError):
        KeyRing([("k1", K1), ("k1", K2)])


def test_repr_hides_keys() -> None:
    kr = ring(("k1", K1))
    assert "k1" in repr(kr)
    assert b64(K1)[:8] not in repr(kr) and str(K1)[2:10] not in repr(kr)


def test_generate_entry_is_parseable_and_random() -> None:
    entry = KeyRing.generate_entry("dev-2024")
    other = KeyRing.generate_entry("dev-2024")
    assert entry.startswith("dev-2024:") and entry != other
    assert KeyRing.parse(entry).primary_id == "dev-2024"
    assert len(base64.b64decode(entry.split(":", 1)[1])) == 32
    with pytest.raises(ValueError):
        KeyRing.generate_entry("no spaces")


def test_subkey_is_hkdf_sha256_and_differs_by_purpose_and_key() -> None:
    kr = ring(("k1", K1), ("k2", K2))
    expected = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"legacy-planning/claim-token"
    ).derive(K1)
    assert kr.subkey("k1", "claim-token") == expected
    assert kr.subkey("k1", "claim-token") == kr.subkey("k1", "claim-token")
    assert kr.subkey("k1", "claim-token") != kr.subkey("k1", "archive-key-wrap")
    assert kr.subkey("k1", "claim-token") != kr.subkey("k2", "claim-token")
    assert kr.subkey("k1", "claim-token") != K1
    assert len(kr.subkey("k2", "x")) == 32


def test_subkey_unknown_id() -> None:
    with pytest.raises(UnknownKeyError):
        ring(("k1", K1)).subkey("k2", "claim-token")


def test_wrap_unwrap_round_trip() -> None:
    kr = ring(("k1", K1))
    dk = new_data_key()
    key_id, wrapped = kr.wrap_data_key(dk, OBJECT_ID)
    assert key_id == "k1"
    assert len(wrapped) == 12 + 32 + 16
    assert dk not in wrapped
    assert kr.unwrap_data_key(key_id, wrapped, OBJECT_ID) == dk
    assert kr.wrap_data_key(dk, OBJECT_ID)[1] != wrapped  # fresh nonce each time


def test_wrap_survives_rotation_and_new_wraps_use_new_primary() -> None:
    dk = new_data_key()
    old_ring = ring(("k1", K1))
    old_id, old_wrapped = old_ring.wrap_data_key(dk, OBJECT_ID)
    rotated = ring(("k2", K2), ("k1", K1))
    assert rotated.unwrap_data_key(old_id, old_wrapped, OBJECT_ID) == dk
    new_id, new_wrapped = rotated.wrap_data_key(dk, OBJECT_ID)
    assert new_id == "k2"
    assert rotated.unwrap_data_key(new_id, new_wrapped, OBJECT_ID) == dk
    with pytest.raises(IntegrityError):
        rotated.unwrap_data_key("k1", new_wrapped, OBJECT_ID)  # the id is not just a label


def test_unwrap_with_key_removed_from_ring_raises_unknown_key() -> None:
    dk = new_data_key()
    key_id, wrapped = ring(("k1", K1)).wrap_data_key(dk, OBJECT_ID)
    with pytest.raises(UnknownKeyError) as info:
        ring(("k2", K2)).unwrap_data_key(key_id, wrapped, OBJECT_ID)
    assert isinstance(info.value, IntegrityError)
    assert "k1" in str(info.value)


def test_unwrap_rejects_tamper_wrong_object_and_wrong_length() -> None:
    kr = ring(("k1", K1))
    dk = new_data_key()
    key_id, wrapped = kr.wrap_data_key(dk, OBJECT_ID)
    with pytest.raises(IntegrityError):
        kr.unwrap_data_key(key_id, flip(wrapped, 20), OBJECT_ID)
    with pytest.raises(IntegrityError):
        kr.unwrap_data_key(key_id, wrapped, "other-object")
    with pytest.raises(IntegrityError):
        kr.unwrap_data_key(key_id, wrapped[:-1], OBJECT_ID)
    with pytest.raises(ValueError):
        kr.wrap_data_key(dk[:16], OBJECT_ID)


def test_wrap_uses_a_key_independent_of_seal_purposes() -> None:
    kr = ring(("k1", K1))
    with pytest.raises(ValueError):
        kr.seal("archive-key-wrap", new_data_key(), OBJECT_ID.encode())


# ---------------------------------------------------------------- seal / open


def test_seal_open_round_trip_and_format() -> None:
    kr = ring(("k1", K1))
    sealed = kr.seal("claim-token", b"token-value", b"claim:42")
    key_id, _, payload = sealed.partition(".")
    assert key_id == "k1"
    assert set(payload) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert b"token-value" not in base64.urlsafe_b64decode(payload + "==")
    assert kr.open("claim-token", sealed, b"claim:42") == b"token-value"
    assert kr.seal("claim-token", b"token-value", b"claim:42") != sealed


def test_seal_survives_rotation() -> None:
    sealed = ring(("k1", K1)).seal("claim-token", b"v", b"a")
    rotated = ring(("k2", K2), ("k1", K1))
    assert rotated.open("claim-token", sealed, b"a") == b"v"
    assert rotated.seal("claim-token", b"v", b"a").startswith("k2.")
    with pytest.raises(UnknownKeyError):
        ring(("k2", K2)).open("claim-token", sealed, b"a")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s[:-2] + ("A" if s[-2] != "A" else "B") + s[-1],
        lambda s: s[:5] + ("A" if s[5] != "A" else "B") + s[6:],
        lambda s: s[:-4],
        lambda s: s + "A",
        lambda s: s.replace(".", ""),
        lambda s: s.split(".")[0] + ".",
        lambda s: s + "=",
        lambda s: s[:4] + "+" + s[5:],
        lambda s: "",
    ],
)
def test_open_rejects_tampered_or_malformed(mutate: Callable[[str], str]) -> None:
    kr = ring(("k1", K1))
    sealed = kr.seal("claim-token", b"secret-token", b"aad")
    bad = mutate(sealed)
    assert bad != sealed
    with pytest.raises(IntegrityError) as info:
        kr.open("claim-token", bad, b"aad")
    assert "secret-token" not in str(info.value)


def test_open_rejects_wrong_purpose_and_wrong_aad() -> None:
    kr = ring(("k1", K1))
    sealed = kr.seal("claim-token", b"v", b"claim:1")
    with pytest.raises(IntegrityError):
        kr.open("session", sealed, b"claim:1")
    with pytest.raises(IntegrityError):
        kr.open("claim-token", sealed, b"claim:2")
    assert kr.open("claim-token", sealed, b"claim:1") == b"v"


def test_open_with_malformed_key_id_does_not_echo_it() -> None:
    kr = ring(("k1", K1))
    sealed = kr.seal("claim-token", b"v", b"a")
    forged = "<script>evil" + sealed[2:]
    with pytest.raises(UnknownKeyError) as info:
        kr.open("claim-token", forged, b"a")
    assert "<script>" not in str(info.value)


# ---------------------------------------------------------------- the final segment alone


def _final(ct: bytes, size: int) -> tuple[bytes, bytes]:
    offset, length = final_segment_span(size)
    assert offset + length == len(ct)
    return ct[:HEADER], ct[offset:]


@pytest.mark.parametrize("size", [0, 1, S - 1, S, S + 1, 3 * S + 7])
def test_open_final_segment_authenticates_the_end_of_the_stream(size: int) -> None:
    key, data = new_data_key(), os.urandom(size)
    ct = encrypt(data, key)
    header, tail = _final(ct, size)
    assert open_final_segment(key, OBJECT_ID, header, tail, size) == data[size - size % S :]


@pytest.mark.parametrize(
    "damage",
    ["other key", "other object", "flipped tail", "flipped header", "wrong size", "non-final segment"],
)
def test_open_final_segment_refuses(damage: str) -> None:
    key, size = new_data_key(), 2 * S + 100
    ct = encrypt(os.urandom(size), key)
    header, tail = _final(ct, size)
    args: list = [key, OBJECT_ID, header, tail, size]
    if damage == "other key":
        args[0] = new_data_key()
    elif damage == "other object":
        args[1] = "doc-9999"
    elif damage == "flipped tail":
        args[3] = tail[:-1] + bytes([tail[-1] ^ 1])
    elif damage == "flipped header":
        args[2] = header[:2] + bytes([header[2] ^ 1]) + header[3:]
    elif damage == "wrong size":
        args[4] = size + 1
    else:  # a full middle segment passed off as the last one of a shorter stream
        args[3], args[4] = ct[HEADER + CT_SEG : HEADER + 2 * CT_SEG], S - 1 + S
    with pytest.raises(IntegrityError):
        open_final_segment(*args)


# ---------------------------------------------------------------- random access


def decrypt_slice(ct: bytes, key: bytes, size: int, start: int, stop: int, strategy: str = "whole") -> bytes:
    """plaintext[start:stop] from only the ciphertext segment_span names (plus the header)."""
    span = crypto.segment_span(size, start, stop)
    dec = crypto.RangeDecryptor(key, OBJECT_ID, ct[:HEADER], size, start, stop)
    out = bytearray()
    for piece in chunker(strategy, seed=2)(ct[span.offset : span.offset + span.length]):
        out += dec.update(piece)
    dec.finalize()
    return bytes(out)


RANGE_SIZES = [1, S - 1, S, S + 1, 3 * S, 3 * S + 100]


def edge_ranges(size: int) -> list[tuple[int, int]]:
    """At 0, inside one segment, across boundaries, to the last byte, single bytes, whole."""
    candidates = [
        (0, 1),
        (0, size),
        (size - 1, size),
        (0, min(size, S)),
        (min(size - 1, 10), min(size, 20)),
        (S - 1, S + 1),
        (S, S + 1),
        (S - 5, 2 * S + 5),
        (S + 3, 3 * S),
        (2 * S, size),
        (size // 2, size),
    ]
    return sorted({(a, b) for a, b in candidates if 0 <= a < b <= size})


@pytest.mark.parametrize("size", RANGE_SIZES)
@pytest.mark.parametrize("strategy", ["whole", "1000", "random"])
def test_range_decrypt_is_the_slice_of_the_plaintext(size: int, strategy: str, key: bytes) -> None:
    data = os.urandom(size)
    ct = encrypt(data, key)
    for start, stop in edge_ranges(size):
        assert decrypt_slice(ct, key, size, start, stop, strategy) == data[start:stop], (start, stop)


@pytest.mark.parametrize("size", RANGE_SIZES)
def test_segment_span_reads_only_the_segments_touched(size: int) -> None:
    for start, stop in edge_ranges(size):
        span = crypto.segment_span(size, start, stop)
        first, last = start // S, (stop - 1) // S
        assert span.first == first and span.skip == start - first * S
        assert span.offset == HEADER + first * CT_SEG
        assert span.offset + span.length == min(HEADER + (last + 1) * CT_SEG, ciphertext_size(size))
    # The last byte of a large file costs one segment, not a scan from the start.
    big = 100 * MIB
    span = crypto.segment_span(big, big - 1, big)
    assert span.length == CT_SEG  # 100 MiB is a multiple of S: its last byte ends the last full segment
    assert span.offset == ciphertext_size(big) - TAG - CT_SEG  # just before the empty final segment


def test_segment_span_refuses_empty_or_out_of_bounds() -> None:
    for start, stop, size in [(0, 0, 10), (5, 4, 10), (0, 11, 10), (-1, 2, 10), (0, 1, 0)]:
        with pytest.raises(ValueError):
            crypto.segment_span(size, start, stop)


def test_range_of_the_empty_final_segment_case(key: bytes) -> None:
    """A size that is a multiple of S ends with an empty final segment the range never needs."""
    data = os.urandom(2 * S)
    ct = encrypt(data, key)
    span = crypto.segment_span(2 * S, S, 2 * S)
    assert span.offset + span.length == HEADER + 2 * CT_SEG  # stops before the empty final segment
    assert decrypt_slice(ct, key, 2 * S, S, 2 * S) == data[S:]


@pytest.mark.parametrize("bad_segment", [1, 2])
def test_range_decrypt_releases_nothing_of_a_tampered_segment(bad_segment: int, key: bytes) -> None:
    size = 3 * S + 100
    data = os.urandom(size)
    ct = flip(encrypt(data, key), HEADER + bad_segment * CT_SEG + 7)
    start, stop = S + 10, size
    span = crypto.segment_span(size, start, stop)
    dec = crypto.RangeDecryptor(key, OBJECT_ID, ct[:HEADER], size, start, stop)
    released = bytearray()
    with pytest.raises(IntegrityError):
        for piece in chunker("1000")(ct[span.offset : span.offset + span.length]):
            released += dec.update(piece)
    assert bytes(released) == data[start : bad_segment * S]
    with pytest.raises(RuntimeError):
        dec.update(b"")


RANGE_TAMPERS: dict[str, Callable[[bytes, int], bytes]] = {
    # (ciphertext of the span, segment index of its first segment) -> forged span
    "segment from another position": lambda body, first: body[CT_SEG : 2 * CT_SEG] + body[CT_SEG:],
    "truncated": lambda body, first: body[:-1],
    "cut on a boundary": lambda body, first: body[:CT_SEG],
    "extra bytes": lambda body, first: body + b"\x00",
}


@pytest.mark.parametrize("name", list(RANGE_TAMPERS))
def test_range_decrypt_refuses_moved_truncated_or_padded_segments(name: str, key: bytes) -> None:
    size = 3 * S + 100
    data = os.urandom(size)
    ct = encrypt(data, key)
    start, stop = S, size
    span = crypto.segment_span(size, start, stop)
    body = RANGE_TAMPERS[name](ct[span.offset : span.offset + span.length], span.first)
    dec = crypto.RangeDecryptor(key, OBJECT_ID, ct[:HEADER], size, start, stop)
    with pytest.raises(IntegrityError):
        dec.update(body)
        dec.finalize()


def test_range_decrypt_binds_the_final_flag_and_the_header(key: bytes) -> None:
    size = 2 * S + 10
    ct = encrypt(os.urandom(size), key)
    # Claiming the object is one segment shorter makes segment 1 "final": it must not open.
    with pytest.raises(IntegrityError):
        decrypt_slice(ct, key, 2 * S - 1, S, 2 * S - 1)
    # Another header (another stream's nonce prefix) opens nothing.
    other = encrypt(os.urandom(size), key)
    dec = crypto.RangeDecryptor(key, OBJECT_ID, other[:HEADER], size, 0, 10)
    with pytest.raises(IntegrityError):
        dec.update(ct[HEADER : HEADER + CT_SEG])
    with pytest.raises(IntegrityError):
        crypto.RangeDecryptor(key, OBJECT_ID, b"\x02" + ct[1:HEADER], size, 0, 10)


async def test_decrypt_range_streams_and_detects_truncation(key: bytes) -> None:
    size = 5 * S + 3
    data = os.urandom(size)
    ct = encrypt(data, key)
    start, stop = 2 * S - 7, 4 * S + 9
    span = crypto.segment_span(size, start, stop)
    body = ct[span.offset : span.offset + span.length]
    got = await collect(
        crypto.decrypt_range(
            key, OBJECT_ID, ct[:HEADER], size, start, stop, aiter_chunks(chunker("1MiB")(body))
        )
    )
    assert got == data[start:stop]
    released = bytearray()
    with pytest.raises(IntegrityError):
        async for piece in crypto.decrypt_range(
            key, OBJECT_ID, ct[:HEADER], size, start, stop, aiter_chunks(iter([body[:-5]]))
        ):
            released += piece
    assert bytes(released) == data[start : len(released) + start]
