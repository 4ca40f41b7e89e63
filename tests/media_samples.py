"""Real media files, made by the tests: a PNG photo, a WAV voice recording and a WebM (VP8)
video a browser can decode, play and seek."""

from __future__ import annotations

import io
import math
import os
import struct
import wave
import zlib


def png(width: int = 96, height: int = 64) -> bytes:
    """A gradient, as an 8-bit RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 255 // width, y * 255 // height, 160)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def wav(seconds: float = 2.0, rate: int = 8000) -> bytes:
    """A 440 Hz tone, 16-bit mono PCM."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(
            b"".join(
                struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                for i in range(int(seconds * rate))
            )
        )
    return out.getvalue()


def webm(seconds: int = 12, width: int = 320, height: int = 240) -> bytes:
    """A VP8 video of noise at one frame a second: about 90 KB a second of video, so seeking
    near its end lands well past the first bytes; encoded in well under a second."""
    import av  # the dev extras install it; imported here so only the tests that need it pay

    out = io.BytesIO()
    with av.open(out, "w", format="webm") as container:
        stream = container.add_stream(
            "libvpx",
            rate=1,
            options={"deadline": "realtime", "cpu-used": "16", "b": "20M", "qmin": "4", "qmax": "10"},
        )
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(seconds):
            frame = av.VideoFrame(width, height, "yuv420p")
            for plane in frame.planes:
                plane.update(os.urandom(plane.buffer_size))
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return out.getvalue()
