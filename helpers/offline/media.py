"""Plumbing: images and documents in a request: their real size read from the file headers, and their token cost.

Images: the PNG, JPEG, GIF and WebP headers give the pixel size (nothing is decoded but the few header bytes);
tokens are about width x height / 750 after the documented resizing: a long edge over 1568 px, or more than about
1,600 tokens (1.2 megapixels: 1092 x 1092 is the largest square kept as it is), is scaled down with its aspect ratio
kept. High-resolution models (Opus 4.7 and later) keep up to 2576 px and about 3.75 MP (the figure their launch
notes give; the vision page read gives only the standard limits).
Source: https://platform.claude.com/docs/en/build-with-claude/vision ("Evaluate image size", "Calculate image costs").

PDFs: each page is read as its text plus an image of the page (https://platform.claude.com/docs/en/build-with-claude/
pdf-support, "Estimate your costs"); the page count and the text come from the file's own objects (uncompressed or
Flate streams: the `Tj`/`TJ` strings), the page size from its MediaBox (points; 72 to the inch, rendered at 96 dpi).
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib
from dataclasses import dataclass

__all__ = [
    "ImageFacts",
    "sniff_image",
    "image_tokens",
    "decode_base64",
    "pdf_facts",
    "PdfFacts",
    "MAX_IMAGE_BYTES",
    "URL_IMAGE_SIZE",
]

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # per image, of its base64 text (observed: "image exceeds 5 MB maximum: N bytes")
URL_IMAGE_SIZE = (1092, 1092)  # an image the offline model cannot fetch (a URL source) counts as a full-size square


@dataclass(frozen=True)
class ImageFacts:
    media_type: str  # what the bytes are: image/png, image/jpeg, image/gif, image/webp
    width: int
    height: int


def decode_base64(data: str) -> bytes | None:
    """The bytes of a base64 string, or None when it is not valid base64 (whitespace and a data: URL are not)."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def sniff_image(raw: bytes) -> ImageFacts | None:
    """Format and pixel size from the header bytes, or None for bytes that are none of the four formats."""
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24 and raw[12:16] == b"IHDR":
        w, h = struct.unpack(">II", raw[16:24])
        return ImageFacts("image/png", w, h)
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        w, h = struct.unpack("<HH", raw[6:10])
        return ImageFacts("image/gif", w, h)
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP" and len(raw) >= 30:
        return _webp(raw)
    if raw[:3] == b"\xff\xd8\xff":
        return _jpeg(raw)
    return None


def _webp(raw: bytes) -> ImageFacts | None:
    chunk = raw[12:16]
    if chunk == b"VP8X":
        w = int.from_bytes(raw[24:27], "little") + 1
        h = int.from_bytes(raw[27:30], "little") + 1
        return ImageFacts("image/webp", w, h)
    if chunk == b"VP8L" and raw[20] == 0x2F:
        bits = int.from_bytes(raw[21:25], "little")
        return ImageFacts("image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8 " and raw[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", raw[26:30])
        return ImageFacts("image/webp", w & 0x3FFF, h & 0x3FFF)
    return None


def _jpeg(raw: bytes) -> ImageFacts | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        length = int.from_bytes(raw[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            h, w = struct.unpack(">HH", raw[i + 5 : i + 9])
            return ImageFacts("image/jpeg", w, h)
        if length < 2:
            return None
        i += 2 + length
    return None


def image_tokens(width: int, height: int, high_res: bool = False) -> int:
    """Tokens of one image: resized as the docs say, then width x height / 750 (at least 1)."""
    if width <= 0 or height <= 0:
        return 1
    edge, pixels = (2576, 3_750_000) if high_res else (1568, 1_200_000)
    scale = min(1.0, edge / max(width, height), (pixels / (width * height)) ** 0.5)
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    return max(1, (w * h + 749) // 750)


@dataclass(frozen=True)
class PdfFacts:
    pages: int
    text: str
    page_size: tuple[int, int]  # pixels at 96 dpi, from the first MediaBox (US Letter if none)


_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_MEDIABOX = re.compile(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]")
_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)
_TEXT_OP = re.compile(rb"\((?:\\.|[^\\)])*\)\s*Tj|\[(?:[^\]]*)\]\s*TJ")
_STRING = re.compile(rb"\((?:\\.|[^\\)])*\)")


def pdf_facts(raw: bytes) -> PdfFacts | None:
    """Pages, text and page size of a PDF, or None when the bytes are not a PDF."""
    if not raw.startswith(b"%PDF-"):
        return None
    pages = len(_PAGE.findall(raw))
    box = _MEDIABOX.search(raw)
    size = (816, 1056)  # US Letter, 8.5 x 11 in at 96 dpi
    if box:
        x0, y0, x1, y1 = (float(v) for v in box.groups())
        size = (max(1, round(abs(x1 - x0) * 96 / 72)), max(1, round(abs(y1 - y0) * 96 / 72)))
    texts = []
    for stream in _STREAM.findall(raw):
        try:
            data = zlib.decompress(stream)
        except zlib.error:
            data = stream
        for op in _TEXT_OP.findall(data):
            texts.append(b"".join(_unescape(s[1:-1]) for s in _STRING.findall(op)))
    text = b" ".join(texts).decode("latin-1")
    return PdfFacts(max(pages, 1), text, size)


def _unescape(s: bytes) -> bytes:
    return re.sub(rb"\\([nrtbf()\\])", lambda m: {b"n": b"\n", b"r": b"\r", b"t": b"\t"}.get(m[1], m[1]), s)
