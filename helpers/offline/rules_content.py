"""Plumbing: the contract's rules on images, documents and cache_control markers.

Each function is one rule of the table in helpers.offline.contract, which names its source. The image and PDF facts
they read (pixel sizes, pages, text) are kept in `call.notes["media"]` for token counting.
"""

from __future__ import annotations

from helpers.offline.cache import check_breakpoints
from helpers.offline.call import Call, refuse
from helpers.offline.media import MAX_IMAGE_BYTES, decode_base64, pdf_facts, sniff_image

__all__ = ["images", "documents", "file_sources", "cache_markers", "MAX_PDF_PAGES"]

MAX_PDF_PAGES = 100  # per request (PDF support docs, "PDF support limits")
MAX_DIMENSION, MANY_IMAGES, MANY_IMAGES_DIMENSION = 8000, 20, 2000


def _media_blocks(call: Call, kind: str) -> list[tuple[str, dict]]:
    """(path, block) of every `kind` block in the messages, tool results included."""
    if kind not in call.kinds:
        return []
    return list(_walk(call, kind))


def _walk(call: Call, kind: str):
    for i, blocks in enumerate(call.blocks):
        for j, block in enumerate(blocks):
            if not isinstance(block, dict):
                continue
            if block.get("type") == kind:
                yield f"messages.{i}.content.{j}.{kind}", block
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for k, sub in enumerate(inner if isinstance(inner, list) else []):
                if isinstance(sub, dict) and sub.get("type") == kind:
                    yield f"messages.{i}.content.{j}.tool_result.content.{k}.{kind}", sub


def images(call: Call) -> None:
    """Images: valid base64 of a PNG, JPEG, GIF or WebP that is what its media_type says, at most 5 MB of base64 text
    (observed: the API measures the encoded string, so a 4 MB file is refused), at most
    8000 px a side (2000 px when the request holds more than 20), at most 100 images (600 on 1M-token models)."""
    found = _media_blocks(call, "image")
    if len(found) > call.model.max_images:
        raise refuse(f"messages: too many images: {len(found)} > {call.model.max_images}")
    limit = MANY_IMAGES_DIMENSION if len(found) > MANY_IMAGES else MAX_DIMENSION
    sizes = call.notes.setdefault("media", {})
    for path, block in found:
        source = block["source"]
        if source["type"] == "url":
            if not source["url"].startswith(("https://", "http://")):
                raise refuse(f"{path}.source.url.url: Input should be a valid URL")
            continue
        if source["type"] != "base64":
            continue
        where = f"{path}.source.base64.data"
        if isinstance(source["data"], str) and len(source["data"]) > MAX_IMAGE_BYTES:  # the base64 text, not the file
            raise refuse(
                f"{path}.source.base64: image exceeds 5 MB maximum: {len(source['data'])} bytes > {MAX_IMAGE_BYTES} bytes"
            )
        raw = decode_base64(source["data"]) if isinstance(source["data"], str) else None
        if raw is None:
            raise refuse(f"{where}: The image data is not valid base64")
        facts = sniff_image(raw)
        if facts is None:
            raise refuse(f"{where}: Could not process image")
        if facts.media_type != source["media_type"]:
            raise refuse(
                f"{where}: The image was specified using the {source['media_type']} media type, but the "
                f"image appears to be a {facts.media_type} image"
            )
        if max(facts.width, facts.height) > limit:
            raise refuse(f"{where}: At least one of the image dimensions exceed max allowed size: {limit} pixels")
        sizes[id(block)] = (facts.width, facts.height)


def documents(call: Call) -> None:
    """Documents: a base64 source is a PDF (application/pdf), at most 100 pages in all; a URL is http(s)."""
    pages = 0
    notes = call.notes.setdefault("media", {})
    for path, block in _media_blocks(call, "document"):
        source = block["source"]
        if source["type"] == "url" and not source["url"].startswith(("https://", "http://")):
            raise refuse(f"{path}.source.url.url: Input should be a valid URL")
        if source["type"] != "base64":
            continue
        raw = decode_base64(source["data"]) if isinstance(source["data"], str) else None
        facts = pdf_facts(raw) if raw is not None else None
        if facts is None:
            raise refuse(f"{path}.source.base64.data: The PDF specified was not valid.")
        pages += facts.pages
        notes[id(block)] = facts
    if pages > MAX_PDF_PAGES:
        raise refuse(f"messages: A maximum of {MAX_PDF_PAGES} PDF pages may be provided.")


def file_sources(call: Call) -> None:
    """A Files API source (`{"type": "file", "file_id": ...}`) names a file uploaded to this account: the offline
    model has no Files API, so every file_id is unknown to it (the API's 404)."""
    for kind in ("image", "document"):
        for _, block in _media_blocks(call, kind):
            if block["source"]["type"] == "file":
                raise refuse(f"File not found: {block['source']['file_id']}", 404, "not_found_error")


def cache_markers(call: Call) -> None:
    """cache_control: at most 4 breakpoints, a 1-hour one never after a 5-minute one (the top-level marker lands on
    the last block), none on an empty text block."""
    check_breakpoints(call.body)
