"""The rules of erasure requests that need no Spark: the key, its check value, hashes, ids, coverage."""

from __future__ import annotations

import hashlib
import hmac
import stat

import pytest
from pydantic import ValidationError

from backfill_platform import settings
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.erasure import requests
from backfill_platform.pipeline.erasure.subjects import erasure_coverage
from backfill_platform.specs.stream import StreamSpec


def test_the_embedded_key_is_made_once_private_and_a_set_key_wins(tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "data_dir", lambda: tmp_path)
    monkeypatch.delenv(requests.KEY_ENV, raising=False)
    first = requests.erasure_key()
    path = tmp_path / requests.KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(first) == 64
    assert requests.erasure_key() == first  # kept, not remade
    # A secret read from a file as is ends in a newline: not part of the key.
    monkeypatch.setenv(requests.KEY_ENV, "from-the-secret-store\n")
    assert requests.erasure_key() == b"from-the-secret-store"
    path.write_text("")
    monkeypatch.delenv(requests.KEY_ENV)
    with pytest.raises(requests.ErasureKeyError, match="is empty"):
        requests.erasure_key()


def test_hashes_are_hmac_sha256_and_check_values_tell_keys_apart_without_showing_them():
    key = b"k" * 100  # longer than a block: hashed first, as HMAC says
    assert requests.hash_subject("u000001", key) == hmac.new(key, b"u000001", hashlib.sha256).hexdigest()
    assert requests.key_check(b"one") != requests.key_check(b"two")
    assert "one" not in requests.key_check(b"one") and len(requests.key_check(b"one")) == 16


def test_request_ids_are_the_ticket_numbered_when_several_else_new():
    assert requests._request_id("GDPR-12", 1, 1) == "GDPR-12"
    assert [requests._request_id("GDPR-12", n, 3) for n in (1, 2, 3)] == [
        "GDPR-12-1",
        "GDPR-12-2",
        "GDPR-12-3",
    ]
    made = {requests._request_id(None, 1, 1) for _ in range(50)}
    assert len(made) == 50 and all(i.startswith("er-") for i in made)


def test_a_subject_field_must_be_a_field_of_the_latest_schema():
    data = demo_spec_data("playback")
    assert StreamSpec.model_validate(data).subject_column == "user_id"
    data["subject_field"] = "device"  # only version 1 has it: renamed to device_type
    with pytest.raises(ValidationError, match="subject_field 'device' is not a field of the latest schema"):
        StreamSpec.model_validate(data)
    data["subject_field"] = "user_id\n"
    with pytest.raises(ValidationError, match="is not a safe identifier"):
        StreamSpec.model_validate(data)


def test_plan_and_status_name_a_stream_without_a_subject_as_not_covered():
    data = demo_spec_data("playback")
    assert "matched on `user_id`" in erasure_coverage(StreamSpec.model_validate(data))
    del data["subject_field"]
    line = erasure_coverage(StreamSpec.model_validate(data))
    assert line.startswith("erasure: playback is not covered: it declares no subject_field")
