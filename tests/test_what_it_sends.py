"""docs/what-the-assistant-sends.md stays true: its list of sent fields is what the context
builder emits, and nothing else of the app's data reaches the model."""

from __future__ import annotations

import re
from pathlib import Path

from web.project.context import build_context

DOC = Path(__file__).resolve().parent.parent / "docs" / "what-the-assistant-sends.md"

PROJECT = {"id": "ID-PROJECT-7f1", "name": "NameMarker", "description": "DescMarker",
           "scale_min": 3.5, "scale_max": 987.25, "scale_unit": "UnitMarker",
           "admin_id": "ADMINID-91c", "created_at": "2026-01-02T03:04:05Z",
           "member_count": 41, "role": "RoleMarker"}
OPINION = {"id": "OPID-55e", "user_id": "USERID-1aa", "user_email": "mail.marker@example.com",
           "user_first_name": "FirstMarker", "user_last_name": "LastMarker",
           "position": "PositionMarker", "lower_bound": 111.25, "peak": 222.75,
           "upper_bound": 333.5, "centroid": 222.5, "created_at": "2026-02-03T04:05:06Z",
           "updated_at": "2026-03-04T05:06:07Z"}
RESULT = {"best_compromise": {"lower": 601.5, "peak": 602.5, "upper": 603.5, "centroid": 602.5},
          "arithmetic_mean": {"lower": 701.5, "peak": 702.5, "upper": 703.5,
                              "centroid": 702.5},
          "median": {"lower": 801.5, "peak": 802.5, "upper": 803.5, "centroid": 802.5},
          "max_error": 44.75, "num_experts": 77, "likert_value": 62,
          "likert_decision": "LikertMarker", "calculated_at": "2026-04-05T06:07:08Z"}
MEMBERS = [{"user_id": "USERID-1aa", "email": "member.mail@example.com",
            "first_name": "FirstMarker", "last_name": "LastMarker",
            "photo_url": "https://app.example/api/v1/users/USERID-1aa/photo?v=PHOTOMARK",
            "role": "expert", "joined_at": "2026-05-06T07:08:09Z",
            "hidden_from_assistants": False}]
MARKERS = {
    "name": "NameMarker", "description": "DescMarker", "scale_min": "3.5",
    "scale_max": "987.25", "scale_unit": "UnitMarker", "member_count": "41",
    "user_first_name": "FirstMarker", "user_last_name": "LastMarker",
    "position": "PositionMarker", "lower_bound": "111.25", "peak": "222.75",
    "upper_bound": "333.5", "best_compromise": "601.5", "arithmetic_mean": "701.5",
    "median": "801.5", "max_error": "44.75", "num_experts": "77", "likert_value": "62",
    "likert_decision": "LikertMarker",
    # never sent
    "id": "ID-PROJECT-7f1", "admin_id": "ADMINID-91c", "role": "RoleMarker",
    "user_id": "USERID-1aa", "user_email": "mail.marker@example.com",
    "email": "member.mail@example.com", "photo_url": "PHOTOMARK", "created_at": "2026-01-02",
    "updated_at": "2026-03-04", "joined_at": "2026-05-06", "calculated_at": "2026-04-05",
    "opinion id": "OPID-55e",
}


def documented_fields() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- fields:sent -->")[1].split("<!-- /fields:sent -->")[0]
    return {m.group(1) for m in re.finditer(r"^\| `([a-z_]+)` \|", block, re.MULTILINE)}


def test_documented_fields_are_exactly_what_the_builder_sends() -> None:
    context = build_context(PROJECT, [OPINION], RESULT, MEMBERS)
    sent = {field for field, marker in MARKERS.items() if marker in context.text}
    documented = documented_fields() - {"hidden_from_assistants"}
    assert sent == documented, (sorted(sent - documented), sorted(documented - sent))


def test_personal_identifiers_never_reach_the_model() -> None:
    context = build_context(PROJECT, [OPINION], RESULT, MEMBERS)
    for field in ("id", "admin_id", "user_id", "user_email", "email", "photo_url", "role",
                  "opinion id", "created_at", "updated_at", "joined_at", "calculated_at"):
        assert MARKERS[field] not in context.text, field
    assert "@" not in context.text
