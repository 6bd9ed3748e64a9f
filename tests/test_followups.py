"""A follow-up in the quotes form: searched with the earlier question it leans on, no model."""

from __future__ import annotations

from shared.turn_request import Message
from worker.pipeline.rewrite import carry_followup, looks_like_followup


def _history(*pairs: tuple[str, str]) -> tuple[Message, ...]:
    return tuple(Message(role, text) for role, text in pairs)


def test_a_follow_up_is_searched_after_the_question_it_leans_on() -> None:
    history = _history(("user", "What is the maximum error?"),
                       ("assistant", "Here is what the documentation says: “Δmax ...” [1]"))
    assert looks_like_followup("And how is it computed?", history)
    assert carry_followup("And how is it computed?", history) == \
        "What is the maximum error? And how is it computed?"


def test_a_chain_of_follow_ups_carries_back_to_the_question_that_stood_alone() -> None:
    history = _history(("user", "Co je  maximální\nchyba?"), ("assistant", "…"),
                       ("user", "A jak se to počítá?"), ("assistant", "…"))
    # The earlier follow-up leans on the first question: both are carried, whitespace folded.
    assert carry_followup("A proč?", history) == \
        "Co je maximální chyba? A jak se to počítá? A proč?"
    # A question that stood alone ends the chain.
    history = _history(("user", "What is the median?"), ("assistant", "…"),
                       ("user", "Who wrote the method?"), ("assistant", "…"))
    assert carry_followup("And why?", history) == "Who wrote the method? And why?"


def test_at_most_three_messages_are_carried_and_each_earlier_one_is_cut() -> None:
    history = _history(*[("user", f"and then {n}?") for n in range(5)])
    assert carry_followup("and why?", history) == "and then 3? and then 4? and why?"
    long = "What is " + "very " * 200 + "long?"
    carried = carry_followup("And why?", _history(("user", long)))
    assert carried.endswith(" And why?") and len(carried) == 500 + len(" And why?")


def test_without_an_earlier_question_nothing_is_carried() -> None:
    assert not looks_like_followup("And why?", _history(("assistant", "Hello")))
    assert carry_followup("And why?", ()) == "And why?"


def test_a_why_question_or_a_longer_one_naming_its_subject_stands_alone() -> None:
    """"Why ...?" opens many questions that stand alone; only a short one leans back."""
    history = _history(("user", "What is BeCoMe?"))
    for message, language in (
            ("Why did you pick Railway for hosting instead of something like AWS?", "en"),
            ("Proč se mi v projektu nezobrazují výsledky?", "cs"),
            ("Which blockchain does BeCoMe use to store opinions?", "en"),
            ("Co je to fuzzy trojúhelníkové číslo?", "cs")):
        assert not looks_like_followup(message, history, language), message
    for message, language in (("Why?", "en"), ("Why is that?", "en"), ("A proč?", "cs"),
                              ("Proč to?", "cs")):
        assert looks_like_followup(message, history, language), message


def test_a_question_of_up_to_eight_words_pointing_back_leans_on_the_last() -> None:
    history = _history(("user", "How do I export my data?"))
    for message, language in (("Is there an API endpoint for that?", "en"),
                              ("What happens to my own role after that?", "en"),
                              ("When should I use the crisp one?", "en"),
                              ("Why is its error zero?", "en"),
                              ("Jde tam změnit i e-mail?", "cs"),
                              ("co kdyz ji tam nevidim?", "cs")):
        assert looks_like_followup(message, history, language), message
