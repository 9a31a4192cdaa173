"""A notebook's claim: a tick and its sentence when the results bear it out, and a failure
that quotes the sentence and the numbers when they do not."""

from __future__ import annotations

import numpy as np
import pytest

from lessons.claims import ClaimFailed, claim


def test_a_claim_that_holds_prints_its_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    claim(np.bool_(True), "MRTR asks nobody again", asked_again=0)
    assert capsys.readouterr().out == "\N{CHECK MARK} MRTR asks nobody again\n"


def test_a_claim_that_fails_stops_with_the_sentence_and_its_numbers() -> None:
    with pytest.raises(ClaimFailed) as failed:
        claim(2 == 3, "about a quarter fail", failed=0, calls=20)
    message = str(failed.value)
    assert "The notebook says: about a quarter fail" in message
    assert "failed = 0" in message and "calls = 20" in message
    assert isinstance(failed.value, AssertionError)
