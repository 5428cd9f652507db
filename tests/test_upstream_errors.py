"""Mapping upstream error answers into the exception tree (table-driven, no network)."""

from __future__ import annotations

import json

import pytest

from mirror.errors import (
    AuthError,
    BadRequest,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
    UpstreamError,
)
from mirror.upstream.http_errors import (
    named_document,
    parse_error_body,
    parse_error_text,
    scrub,
    to_error,
)

KEY = "AIzaSyCANARY-0123456789-abcdefghijklmnop"
ENABLE = "gcloud services enable developerknowledge.googleapis.com --project=PROJECT_ID"
TARGET = (
    "gcloud services api-keys update KEY_NAME "
    "--api-target=service=developerknowledge.googleapis.com"
)


def google(code: int, status: str, message: str, reason: str | None = None) -> str:
    error: dict[str, object] = {"code": code, "message": message, "status": status}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return json.dumps({"error": error})


@pytest.mark.parametrize(
    ("status", "body", "expected", "hint_part"),
    [
        (
            400,
            google(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
            AuthError,
            "DEVELOPER_KNOWLEDGE_API_KEY",
        ),
        (
            400,
            google(400, "INVALID_ARGUMENT", "Bad key", "API_KEY_INVALID"),
            AuthError,
            "DEVELOPER_KNOWLEDGE_API_KEY",
        ),
        (400, google(400, "INVALID_ARGUMENT", "name too long"), BadRequest, "500 characters"),
        (401, google(401, "UNAUTHENTICATED", "no key"), AuthError, "DEVELOPER_KNOWLEDGE_API_KEY"),
        (
            403,
            google(
                403, "PERMISSION_DENIED", "Developer Knowledge API has not been used in project"
            ),
            PermissionDenied,
            ENABLE,
        ),
        (403, google(403, "PERMISSION_DENIED", "x", "SERVICE_DISABLED"), PermissionDenied, ENABLE),
        (
            403,
            google(403, "PERMISSION_DENIED", "Requests to this API ... are blocked."),
            PermissionDenied,
            TARGET,
        ),
        (
            403,
            google(403, "PERMISSION_DENIED", "x", "API_KEY_SERVICE_BLOCKED"),
            PermissionDenied,
            TARGET,
        ),
        (403, google(403, "PERMISSION_DENIED", "Model Armor"), PermissionDenied, "api-keys"),
        (404, google(404, "NOT_FOUND", "Requested entity was not found."), NotFound, "whole"),
        (429, google(429, "RESOURCE_EXHAUSTED", "Quota exceeded"), QuotaExceeded, "100"),
        (500, google(500, "INTERNAL", "oops"), Unavailable, None),
        (502, "<html>Bad Gateway</html>", Unavailable, None),
        (503, "", Unavailable, None),
        (504, google(504, "DEADLINE_EXCEEDED", "slow"), Unavailable, None),
        (409, google(409, "ABORTED", "conflict"), UpstreamError, None),
    ],
)
def test_http_errors_map_into_the_tree(
    status: int, body: str, expected: type[Exception], hint_part: str | None
) -> None:
    names = ["documents/a.dev/x", "documents/a.dev/y"]
    error = to_error(parse_error_body(status, body), what="batchGet of 2", names=names)
    assert type(error) is expected
    assert error.status == status
    if hint_part:
        assert hint_part in (error.hint or "")
    if expected is not NotFound:
        assert error.message.startswith(f"batchGet of 2: HTTP {status}")


def test_a_404_that_names_a_document_blames_only_that_one() -> None:
    names = ["documents/a.dev/x", "documents/a.dev/x/y", "documents/a.dev/z"]
    body = google(404, "NOT_FOUND", "Document documents/a.dev/x/y not found.")
    error = to_error(parse_error_body(404, body), what="batchGet", names=names)
    assert isinstance(error, NotFound)
    assert error.names == ["documents/a.dev/x/y"]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Document documents/a.dev/x not found.", "documents/a.dev/x"),
        ("Document documents/a.dev/x.html not found", "documents/a.dev/x.html"),
        ("'documents/a.dev/x' is missing", "documents/a.dev/x"),
        ("Document documents/a.dev/xy not found.", None),  # not a requested name
        ("Document documents/a.dev/x/deeper not found.", None),
        ("Requested entity was not found.", None),
    ],
)
def test_named_document(message: str, expected: str | None) -> None:
    assert named_document(message, ["documents/a.dev/x", "documents/a.dev/x.html"]) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("API key not valid. Please pass a valid API key.", AuthError),
        (
            "Method doesn't allow unregistered callers (callers without established identity).",
            AuthError,
        ),
        (
            "Developer Knowledge API has not been used in project 123 before or it is disabled.",
            PermissionDenied,
        ),
        (
            "Requests to this API developerknowledge.googleapis.com method x are blocked.",
            PermissionDenied,
        ),
        ("Document documents/a.dev/x not found.", NotFound),
        ("Quota exceeded for quota metric 'get requests'", QuotaExceeded),
        ("429 Too Many Requests", QuotaExceeded),
        ("RESOURCE_EXHAUSTED: out of quota", QuotaExceeded),
        ("UNAVAILABLE: try later", Unavailable),
        ("At most 20 documents can be requested at once; got 21.", BadRequest),
        (google(403, "PERMISSION_DENIED", "nope", "API_KEY_SERVICE_BLOCKED"), PermissionDenied),
        ("something odd happened", UpstreamError),
    ],
)
def test_error_text_maps_like_http(text: str, expected: type[Exception]) -> None:
    error = to_error(parse_error_text(text), what="get_documents", names=["documents/a.dev/x"])
    assert type(error) is expected


def test_status_numbers_inside_names_are_not_statuses() -> None:
    detail = parse_error_text("failed for documents/a.dev/errors/404 and c/503-page")
    assert detail.status is None


def test_the_key_is_scrubbed_from_response_text() -> None:
    body = google(400, "INVALID_ARGUMENT", f"API key not valid: {KEY}. Please pass a valid key.")
    error = to_error(parse_error_body(400, body, key=KEY), what="batchGet")
    assert KEY not in str(error) and "***" in str(error)
    assert KEY not in scrub(f"plain {KEY} text", KEY)
    assert KEY not in parse_error_text(f"isError: {KEY}", key=KEY).message


def test_long_bodies_are_trimmed() -> None:
    detail = parse_error_body(502, "<html>" + "x" * 5000 + "</html>")
    assert len(detail.message) <= 300
