"""Encryption at rest: a rotating key ring, envelope data keys and a streaming AEAD.

Archive files can be far larger than memory and are streamed to and from object storage, so
content is sealed in fixed 64 KiB segments in the style of Tink's AES-GCM-HKDF streaming and
age's STREAM. Each segment is authenticated on its own (so plaintext can be released as soon as
its segment checks out), its position and "last segment" flag are bound through the nonce (so
truncation, reordering and duplication fail) and the object id through the associated data (so
ciphertext cannot be moved between objects).

Wire format, version 1::

    header  = 0x01 || prefix (7 random bytes)
    segment = AES-256-GCM(data_key, nonce = prefix || uint32be(i) || last, aad, plaintext_i)
    aad     = b"legacy-planning/archive/v1|" || object_id (UTF-8)

Every segment but the last carries exactly SEGMENT_SIZE plaintext bytes; the last carries
0..SEGMENT_SIZE-1, so a plaintext whose length is a multiple of SEGMENT_SIZE (including 0) ends
with an empty final segment and a stream can never legitimately end on a full segment.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import struct
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "HEADER_SIZE",
    "SEGMENT_SIZE",
    "BytesLike",
    "IntegrityError",
    "KeyRing",
    "RangeDecryptor",
    "SegmentSpan",
    "StreamDecryptor",
    "StreamEncryptor",
    "UnknownKeyError",
    "ciphertext_size",
    "decrypt_range",
    "decrypt_stream",
    "final_segment_span",
    "new_data_key",
    "open_final_segment",
    "segment_span",
]

SEGMENT_SIZE = 64 * 1024  # plaintext bytes per segment

BytesLike = bytes | bytearray | memoryview

_VERSION = 0x01
_PREFIX_SIZE = 7
_HEADER_SIZE = 1 + _PREFIX_SIZE
HEADER_SIZE = _HEADER_SIZE  # bytes before the first segment
_NONCE_SIZE = 12
_TAG_SIZE = 16
_KEY_SIZE = 32
_CT_SEGMENT_SIZE = SEGMENT_SIZE + _TAG_SIZE
_MAX_SEGMENTS = 2**32  # the nonce counter is a uint32
_NONCE_TAIL = struct.Struct(">IB")
_ARCHIVE_AAD_PREFIX = b"legacy-planning/archive/v1|"
_SUBKEY_INFO_PREFIX = b"legacy-planning/"
_WRAP_PURPOSE = "archive-key-wrap"
_WRAPPED_KEY_SIZE = _NONCE_SIZE + _KEY_SIZE + _TAG_SIZE
# The async helpers feed large input chunks in slices so each yielded piece stays bounded.
_BATCH_SIZE = 16 * SEGMENT_SIZE
_KEY_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
_B64URL_RE = re.compile(r"[A-Za-z0-9_-]*")
_ENV_FORMAT_HINT = "expected 'id:base64key[,id:base64key...]' with the primary key first"


class IntegrityError(Exception):
    """Ciphertext failed authentication or is malformed.

    One type for every failure so callers cannot (and need not) distinguish tampering from
    corruption; messages are fixed strings and never carry key material or plaintext.
    """


class UnknownKeyError(IntegrityError):
    """The key id is not in the ring, e.g. a retired key; kept separate so ops can spot it."""


def _describe_key_id(key_id: str) -> str:
    # Key ids may come from untrusted input (sealed tokens); only echo well-formed ones.
    return repr(key_id) if _KEY_ID_RE.fullmatch(key_id) else "(malformed)"


def _check_object_id(object_id: str) -> bytes:
    # An empty id would silently drop the binding of ciphertext to its object.
    if not object_id:
        raise ValueError("object_id must be a non-empty string")
    return object_id.encode()


def _check_data_key(data_key: BytesLike) -> None:
    if len(data_key) != _KEY_SIZE:
        raise ValueError(f"data key must be {_KEY_SIZE} bytes")


def _check_seal_purpose(purpose: str) -> None:
    if not purpose:
        raise ValueError("purpose must be a non-empty string")
    # Keeps seal()/open() from minting or reading values under the key-wrapping subkey.
    if purpose == _WRAP_PURPOSE:
        raise ValueError(f"purpose {purpose!r} is reserved for data key wrapping")


def _decode_env_key(text: str) -> bytes:
    """Accept both base64 alphabets, padded or not, since keys get pasted from many tools."""
    normalized = text.replace("-", "+").replace("_", "/")
    normalized += "=" * (-len(normalized) % 4)
    return base64.b64decode(normalized, validate=True)


def _b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    """Strict decode: one canonical encoding per value, so sealed strings are not malleable."""
    if not _B64URL_RE.fullmatch(text):
        raise IntegrityError("sealed value is malformed")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise IntegrityError("sealed value is malformed") from None
    # Only a length with leftover bits (not a multiple of 4) can encode one value two ways.
    if len(text) % 4 and _b64url_encode(raw) != text:
        raise IntegrityError("sealed value is malformed")
    return raw


class KeyRing:
    """Master keys from ENCRYPTION_KEYS ("id1:base64key,id2:base64key"); the first is primary.

    Keys are 32 raw bytes (standard or URL-safe base64, padding optional); ids match
    ``^[A-Za-z0-9_-]{1,32}$`` and are unique. New material is always produced under the
    primary key while every key in the ring still decrypts, so rotation is "prepend a new
    key, re-wrap at leisure, then drop the old one". Masters are never used directly: each
    purpose gets its own HKDF subkey, so a flaw in one use cannot leak into another.
    """

    __slots__ = ("_aeads", "_keys", "_subkeys")

    def __init__(self, keys: Iterable[tuple[str, bytes]]) -> None:
        self._keys: dict[str, bytes] = {}
        for key_id, key in keys:
            if not _KEY_ID_RE.fullmatch(key_id):
                raise ValueError("ENCRYPTION_KEYS: key ids must match ^[A-Za-z0-9_-]{1,32}$")
            if key_id in self._keys:
                raise ValueError(f"ENCRYPTION_KEYS: duplicate key id {key_id!r}")
            if len(key) != _KEY_SIZE:
                raise ValueError(f"ENCRYPTION_KEYS: key {key_id!r} must be {_KEY_SIZE} bytes, got {len(key)}")
            self._keys[key_id] = bytes(key)
        if not self._keys:
            raise ValueError(f"ENCRYPTION_KEYS: at least one key is required; {_ENV_FORMAT_HINT}")
        self._subkeys: dict[tuple[str, str], bytes] = {}
        self._aeads: dict[tuple[str, str], AESGCM] = {}

    def __repr__(self) -> str:
        # Never let key bytes reach logs through a repr.
        return f"KeyRing(key_ids={self.key_ids!r})"

    @classmethod
    def parse(cls, value: str) -> KeyRing:
        """Parse the environment value; errors name the entry but never echo key text."""
        if not value or not value.strip():
            raise ValueError(f"ENCRYPTION_KEYS is empty; {_ENV_FORMAT_HINT}")
        pairs: list[tuple[str, bytes]] = []
        for position, raw_entry in enumerate(value.split(","), start=1):
            entry = raw_entry.strip()
            where = f"ENCRYPTION_KEYS entry {position}"
            if not entry:
                raise ValueError(f"{where} is empty (stray comma?); {_ENV_FORMAT_HINT}")
            key_id, sep, key_text = entry.partition(":")
            key_id, key_text = key_id.strip(), key_text.strip()
            if not sep:
                raise ValueError(f"{where} has no ':' between key id and key; {_ENV_FORMAT_HINT}")
            if not _KEY_ID_RE.fullmatch(key_id):
                raise ValueError(f"{where}: key id must match ^[A-Za-z0-9_-]{{1,32}}$")
            try:
                key = _decode_env_key(key_text)
            except (binascii.Error, ValueError):
                raise ValueError(f"{where} (id {key_id!r}): key is not valid base64") from None
            if len(key) != _KEY_SIZE:
                raise ValueError(
                    f"{where} (id {key_id!r}): key must decode to {_KEY_SIZE} bytes, got {len(key)}"
                )
            pairs.append((key_id, key))
        return cls(pairs)

    @staticmethod
    def generate_entry(key_id: str) -> str:
        """A fresh ENCRYPTION_KEYS entry, for dev bootstrap and rotation runbooks."""
        if not _KEY_ID_RE.fullmatch(key_id):
            raise ValueError("key ids must match ^[A-Za-z0-9_-]{1,32}$")
        return f"{key_id}:{base64.b64encode(os.urandom(_KEY_SIZE)).decode('ascii')}"

    @property
    def primary_id(self) -> str:
        return next(iter(self._keys))

    @property
    def key_ids(self) -> list[str]:
        return list(self._keys)

    def subkey(self, key_id: str, purpose: str) -> bytes:
        """HKDF-SHA256 subkey of a master key; cached since it is derived on every request."""
        cache_key = (key_id, purpose)
        derived = self._subkeys.get(cache_key)
        if derived is None:
            if not purpose:
                raise ValueError("purpose must be a non-empty string")
            master = self._keys.get(key_id)
            if master is None:
                raise UnknownKeyError(f"unknown encryption key id {_describe_key_id(key_id)}")
            derived = HKDF(
                algorithm=hashes.SHA256(),
                length=_KEY_SIZE,
                salt=None,
                info=_SUBKEY_INFO_PREFIX + purpose.encode(),
            ).derive(master)
            self._subkeys[cache_key] = derived
        return derived

    def _aead(self, key_id: str, purpose: str) -> AESGCM:
        cache_key = (key_id, purpose)
        aead = self._aeads.get(cache_key)
        if aead is None:
            aead = AESGCM(self.subkey(key_id, purpose))
            self._aeads[cache_key] = aead
        return aead

    def wrap_data_key(self, data_key: bytes, object_id: str) -> tuple[str, bytes]:
        """Envelope-encrypt an object's data key; store the returned key id beside it."""
        _check_data_key(data_key)
        aad = _check_object_id(object_id)
        key_id = self.primary_id
        nonce = os.urandom(_NONCE_SIZE)
        return key_id, nonce + self._aead(key_id, _WRAP_PURPOSE).encrypt(nonce, data_key, aad)

    def unwrap_data_key(self, key_id: str, wrapped: bytes, object_id: str) -> bytes:
        """Recover a data key wrapped under any key still in the ring."""
        aad = _check_object_id(object_id)
        aead = self._aead(key_id, _WRAP_PURPOSE)
        if len(wrapped) != _WRAPPED_KEY_SIZE:
            raise IntegrityError("wrapped data key has the wrong length")
        try:
            return aead.decrypt(wrapped[:_NONCE_SIZE], wrapped[_NONCE_SIZE:], aad)
        except InvalidTag:
            raise IntegrityError("wrapped data key failed authentication") from None

    def seal(self, purpose: str, plaintext: bytes, aad: bytes) -> str:
        """Encrypt a small secret into a text-safe "keyid.base64url(nonce||ct)" string.

        The aad should name what the value belongs to (e.g. a row id) so sealed values
        cannot be swapped between rows.
        """
        _check_seal_purpose(purpose)
        key_id = self.primary_id
        nonce = os.urandom(_NONCE_SIZE)
        ciphertext = self._aead(key_id, purpose).encrypt(nonce, plaintext, aad)
        return f"{key_id}.{_b64url_encode(nonce + ciphertext)}"

    def open(self, purpose: str, sealed: str, aad: bytes) -> bytes:
        """Inverse of seal() under whichever ring key sealed the value."""
        _check_seal_purpose(purpose)
        key_id, sep, payload = sealed.partition(".")
        if not sep:
            raise IntegrityError("sealed value is malformed")
        raw = _b64url_decode(payload)
        if len(raw) < _NONCE_SIZE + _TAG_SIZE:
            raise IntegrityError("sealed value is malformed")
        aead = self._aead(key_id, purpose)
        try:
            return aead.decrypt(raw[:_NONCE_SIZE], raw[_NONCE_SIZE:], aad)
        except InvalidTag:
            raise IntegrityError("sealed value failed authentication") from None


def new_data_key() -> bytes:
    """A fresh per-object key, so one leaked data key exposes one object only."""
    return os.urandom(_KEY_SIZE)


def _archive_aad(object_id: str) -> bytes:
    return _ARCHIVE_AAD_PREFIX + _check_object_id(object_id)


class StreamEncryptor:
    """Streaming AEAD in the style of Tink AES-GCM-HKDF streaming / age STREAM.

    Emits a segment as soon as it is full, so at most one segment of plaintext is ever
    buffered regardless of how the input is chunked.
    """

    __slots__ = ("_aad", "_aead", "_buf", "_counter", "_done", "_header", "_prefix")

    def __init__(self, data_key: bytes, object_id: str) -> None:
        _check_data_key(data_key)
        self._aead = AESGCM(data_key)
        self._aad = _archive_aad(object_id)
        self._prefix = os.urandom(_PREFIX_SIZE)
        self._header: bytes | None = bytes([_VERSION]) + self._prefix
        self._counter = 0
        self._buf = bytearray()
        self._done = False

    def _seal(self, segment: BytesLike, last: bool) -> bytes:
        if self._counter >= _MAX_SEGMENTS:
            raise OverflowError("stream exceeds the 2**32 segment limit of the archive format")
        nonce = self._prefix + _NONCE_TAIL.pack(self._counter, last)
        self._counter += 1
        return self._aead.encrypt(nonce, segment, self._aad)

    def _emit(self, pieces: list[bytes]) -> bytes:
        if pieces and self._header is not None:
            pieces.insert(0, self._header)
            self._header = None
        return b"".join(pieces)

    def update(self, data: BytesLike) -> bytes:
        """Ciphertext for every segment completed by ``data`` (header included in the first)."""
        if self._done:
            raise RuntimeError("StreamEncryptor used after finalize() or a failure")
        try:
            pieces: list[bytes] = []
            buf = self._buf
            with memoryview(data) as view:
                pos = 0
                if buf:
                    pos = min(SEGMENT_SIZE - len(buf), len(view))
                    buf += view[:pos]
                    if len(buf) == SEGMENT_SIZE:
                        pieces.append(self._seal(buf, last=False))
                        buf.clear()
                # Full segments straight from the caller's buffer: no copy, no growth.
                while len(view) - pos >= SEGMENT_SIZE:
                    pieces.append(self._seal(view[pos : pos + SEGMENT_SIZE], last=False))
                    pos += SEGMENT_SIZE
                buf += view[pos:]
            return self._emit(pieces)
        except BaseException:
            self._done = True
            raise

    def finalize(self) -> bytes:
        """The final segment (possibly empty plaintext), which is what marks the stream whole."""
        if self._done:
            raise RuntimeError("StreamEncryptor used after finalize() or a failure")
        self._done = True
        tail = self._seal(self._buf, last=True)
        self._buf.clear()
        return self._emit([tail])


def _nonce_prefix(header: BytesLike) -> bytes:
    """The nonce prefix from a stream header, once its version is known."""
    if len(header) != _HEADER_SIZE or header[0] != _VERSION:
        raise IntegrityError("encrypted stream has an unsupported format version")
    return bytes(header[1:])


def _open_segment(
    aead: AESGCM, prefix: bytes, counter: int, last: bool, segment: BytesLike, aad: bytes
) -> bytes:
    """One segment's plaintext, or IntegrityError: the nonce is bound to position and finality."""
    if counter >= _MAX_SEGMENTS:
        raise IntegrityError("encrypted stream exceeds the segment limit")
    try:
        return aead.decrypt(prefix + _NONCE_TAIL.pack(counter, last), segment, aad)
    except InvalidTag:
        raise IntegrityError(f"encrypted stream segment {counter} failed authentication") from None


class StreamDecryptor:
    """Inverse of StreamEncryptor that only ever returns authenticated plaintext.

    A full-size segment is held back until more bytes arrive: only then is it known not to be
    the end of the stream. Any failure poisons the decryptor so a caller cannot carry on past
    a bad segment.
    """

    __slots__ = ("_aad", "_aead", "_buf", "_counter", "_done", "_prefix")

    def __init__(self, data_key: bytes, object_id: str) -> None:
        _check_data_key(data_key)
        self._aead = AESGCM(data_key)
        self._aad = _archive_aad(object_id)
        self._prefix: bytes | None = None
        self._counter = 0
        self._buf = bytearray()
        self._done = False

    def _open(self, segment: BytesLike, last: bool) -> bytes:
        assert self._prefix is not None
        plaintext = _open_segment(self._aead, self._prefix, self._counter, last, segment, self._aad)
        self._counter += 1
        return plaintext

    def _fail(self) -> None:
        self._done = True
        self._buf.clear()

    def update(self, data: BytesLike) -> bytes:
        """Plaintext of every segment that is now known complete, non-final and authentic."""
        if self._done:
            raise RuntimeError("StreamDecryptor used after finalize() or a failure")
        try:
            return self._update(data)
        except BaseException:
            self._fail()
            raise

    def _update(self, data: BytesLike) -> bytes:
        pieces: list[bytes] = []
        buf = self._buf
        with memoryview(data) as view:
            pos = 0
            if self._prefix is None:
                pos = min(_HEADER_SIZE - len(buf), len(view))
                buf += view[:pos]
                if len(buf) < _HEADER_SIZE:
                    return b""
                self._prefix = _nonce_prefix(buf)
                buf.clear()
            if buf:
                if len(buf) + len(view) - pos <= _CT_SEGMENT_SIZE:
                    buf += view[pos:]
                    return b""
                take = _CT_SEGMENT_SIZE - len(buf)
                buf += view[pos : pos + take]
                pos += take
                pieces.append(self._open(buf, last=False))
                buf.clear()
            # Strictly more than one segment left means this one cannot be the last.
            while len(view) - pos > _CT_SEGMENT_SIZE:
                pieces.append(self._open(view[pos : pos + _CT_SEGMENT_SIZE], last=False))
                pos += _CT_SEGMENT_SIZE
            buf += view[pos:]
        return b"".join(pieces)

    def finalize(self) -> bytes:
        """Authenticate the held-back final segment; the only proof the stream is complete."""
        if self._done:
            raise RuntimeError("StreamDecryptor used after finalize() or a failure")
        try:
            if self._prefix is None:
                raise IntegrityError("encrypted stream is truncated (incomplete header)")
            # A full-size tail can only be a stream cut on a segment boundary: a genuine
            # final segment is always shorter.
            if not _TAG_SIZE <= len(self._buf) < _CT_SEGMENT_SIZE:
                raise IntegrityError("encrypted stream is truncated (final segment missing)")
            plaintext = self._open(self._buf, last=True)
        except BaseException:
            self._fail()
            raise
        self._done = True
        self._buf.clear()
        return plaintext


def _slices(chunk: BytesLike) -> Iterator[BytesLike]:
    if len(chunk) <= _BATCH_SIZE:
        yield chunk
        return
    with memoryview(chunk) as view:
        for start in range(0, len(view), _BATCH_SIZE):
            yield view[start : start + _BATCH_SIZE]


async def decrypt_stream(
    data_key: bytes, object_id: str, chunks: AsyncIterable[bytes]
) -> AsyncIterator[bytes]:
    """Decrypt an async byte stream; raises IntegrityError at the first bad or missing segment.

    Everything yielded before the error was authenticated, but a consumer streaming to a
    client must still treat the error as "abort the response", since the tail is missing.
    """
    decryptor = StreamDecryptor(data_key, object_id)
    async for chunk in chunks:
        for piece in _slices(chunk):
            out = decryptor.update(piece)
            if out:
                yield out
    tail = decryptor.finalize()
    if tail:
        yield tail


def ciphertext_size(plaintext_size: int) -> int:
    """Exact stored size, e.g. for Content-Length of uploads and storage quota checks."""
    if plaintext_size < 0:
        raise ValueError("plaintext_size must be >= 0")
    if plaintext_size // SEGMENT_SIZE + 1 > _MAX_SEGMENTS:
        raise ValueError("plaintext is too large for the archive format")
    offset, length = final_segment_span(plaintext_size)
    return offset + length


def final_segment_span(plaintext_size: int) -> tuple[int, int]:
    """(offset, length) of the final segment in the stream of a plaintext of this size."""
    full_segments, rest = divmod(plaintext_size, SEGMENT_SIZE)
    return _HEADER_SIZE + full_segments * _CT_SEGMENT_SIZE, rest + _TAG_SIZE


def open_final_segment(
    data_key: bytes, object_id: str, header: BytesLike, segment: BytesLike, plaintext_size: int
) -> bytes:
    """Authenticate a stream's final segment on its own, given the stream's header.

    Proves, without reading the whole object, that the stream ends exactly where a plaintext of
    `plaintext_size` bytes ends, that it was sealed whole (the last-segment flag) and that this
    data key and object id open it. The other segments are authenticated when they are read.
    """
    _check_data_key(data_key)
    prefix = _nonce_prefix(header)
    if len(segment) != final_segment_span(plaintext_size)[1]:
        raise IntegrityError("encrypted stream's final segment has the wrong length")
    counter = plaintext_size // SEGMENT_SIZE
    return _open_segment(AESGCM(data_key), prefix, counter, True, segment, _archive_aad(object_id))


# --------------------------------------------------------------------------------------------
# Random access: a plaintext byte range from the segments it touches
# --------------------------------------------------------------------------------------------


class SegmentSpan(NamedTuple):
    """Where the ciphertext of a plaintext byte range lies, whole segments only."""

    offset: int  # ciphertext offset of the first segment touched
    length: int  # ciphertext bytes from there to the end of the last segment touched
    first: int  # index of the first segment touched
    skip: int  # plaintext bytes of the first segment before the range starts


def segment_span(plaintext_size: int, start: int, stop: int) -> SegmentSpan:
    """The segments holding plaintext[start:stop] of a stream of `plaintext_size` bytes.

    The layout is fixed by the size alone (every segment but the last is full), so the
    ciphertext to fetch is known without reading anything: random access costs the same at
    the end of a file as at its start.
    """
    if not 0 <= start < stop <= plaintext_size:
        raise ValueError("need 0 <= start < stop <= plaintext_size")
    first, skip = divmod(start, SEGMENT_SIZE)
    last = (stop - 1) // SEGMENT_SIZE
    offset = _HEADER_SIZE + first * _CT_SEGMENT_SIZE
    end = min(_HEADER_SIZE + (last + 1) * _CT_SEGMENT_SIZE, ciphertext_size(plaintext_size))
    return SegmentSpan(offset, end - offset, first, skip)


class RangeDecryptor:
    """Decrypts the segments of a `segment_span`, releasing only plaintext[start:stop].

    Fed the ciphertext from `span.offset` on, in chunks of any size. Each segment is opened
    as soon as all of its bytes are in, under its own position and finality (both known from
    the plaintext size, so nothing is held back): a segment moved, swapped, truncated or
    flipped fails authentication, and nothing of it or after it is released. Any failure
    poisons the decryptor, as with StreamDecryptor.
    """

    __slots__ = (
        "_aad",
        "_aead",
        "_buf",
        "_counter",
        "_done",
        "_final",
        "_final_length",
        "_prefix",
        "_remaining",
        "_skip",
    )

    def __init__(
        self, data_key: bytes, object_id: str, header: BytesLike, plaintext_size: int, start: int, stop: int
    ) -> None:
        _check_data_key(data_key)
        span = segment_span(plaintext_size, start, stop)
        self._aead = AESGCM(data_key)
        self._aad = _archive_aad(object_id)
        self._prefix = _nonce_prefix(header)
        self._final, rest = divmod(plaintext_size, SEGMENT_SIZE)  # index of the final segment
        self._final_length = rest + _TAG_SIZE
        self._counter = span.first
        self._skip = span.skip
        self._remaining = stop - start  # plaintext bytes still to release
        self._buf = bytearray()
        self._done = False

    def _expected(self) -> int:
        return _CT_SEGMENT_SIZE if self._counter < self._final else self._final_length

    def _open(self, segment: BytesLike) -> bytes:
        last = self._counter == self._final
        plaintext = _open_segment(self._aead, self._prefix, self._counter, last, segment, self._aad)
        self._counter += 1
        if self._skip or len(plaintext) > self._remaining:
            plaintext = plaintext[self._skip : self._skip + self._remaining]
            self._skip = 0
        self._remaining -= len(plaintext)
        return plaintext

    def update(self, data: BytesLike) -> bytes:
        """Authenticated plaintext of the range from every segment that is now complete."""
        if self._done:
            raise RuntimeError("RangeDecryptor used after finalize() or a failure")
        try:
            return self._update(data)
        except BaseException:
            self._done = True
            self._buf.clear()
            raise

    def _update(self, data: BytesLike) -> bytes:
        pieces: list[bytes] = []
        buf = self._buf
        with memoryview(data) as view:
            pos = 0
            while pos < len(view):
                if self._remaining == 0:
                    raise IntegrityError("encrypted range has bytes past its last segment")
                need = self._expected()
                if not buf and len(view) - pos >= need:
                    pieces.append(self._open(view[pos : pos + need]))  # no copy
                    pos += need
                    continue
                take = min(need - len(buf), len(view) - pos)
                buf += view[pos : pos + take]
                pos += take
                if len(buf) == need:
                    pieces.append(self._open(buf))
                    buf.clear()
        return b"".join(pieces)

    def finalize(self) -> None:
        """Confirm every byte of the range was released: the ciphertext was not cut short."""
        if self._done:
            raise RuntimeError("RangeDecryptor used after finalize() or a failure")
        self._done = True
        if self._remaining or self._buf:
            self._buf.clear()
            raise IntegrityError("encrypted range is truncated")


async def decrypt_range(
    data_key: bytes,
    object_id: str,
    header: BytesLike,
    plaintext_size: int,
    start: int,
    stop: int,
    chunks: AsyncIterable[bytes],
) -> AsyncIterator[bytes]:
    """plaintext[start:stop] from the ciphertext of its `segment_span`, streamed.

    As with decrypt_stream, everything yielded is authenticated, and an IntegrityError
    after the first piece means "abort the response": the rest is missing or forged.
    """
    decryptor = RangeDecryptor(data_key, object_id, header, plaintext_size, start, stop)
    async for chunk in chunks:
        for piece in _slices(chunk):
            out = decryptor.update(piece)
            if out:
                yield out
    decryptor.finalize()
