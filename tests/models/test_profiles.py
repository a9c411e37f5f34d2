"""Model profiles and the small models' cookbook: pure functions, no model is run."""

from __future__ import annotations

import ast

import pytest

from prime_kernel.models import cookbook, profiles, prompts, providers
from prime_kernel.models.profiles import DEFAULT, SMALL, profile_for


def test_profiles_are_chosen_by_model_name() -> None:
    assert profile_for("local/smollm2") is SMALL
    assert profile_for("local/anything-else") is SMALL
    assert profile_for("openai/gpt-4o-mini") is DEFAULT
    assert profile_for("scripted/echo") is DEFAULT
    assert profile_for("gpt-4o") is DEFAULT


def test_a_provider_declares_the_profile_of_its_models(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another package's embedded small model gets the small profile without a change here.
    def provider(profile: profiles.Profile | None) -> providers.ModelProvider:
        return providers.ModelProvider(register=print, check=print, models=list, profile=profile)

    installed = {**providers.installed(), "tiny": provider(SMALL), "big": provider(None)}
    monkeypatch.setattr(providers, "installed", lambda: installed)
    assert profile_for("tiny/model-1") is SMALL
    assert profile_for("big/model-1") is DEFAULT
    assert profile_for("tiny") is DEFAULT  # a bare name has no provider prefix


def test_default_profile_is_todays_behaviour() -> None:
    assert DEFAULT.request_kwargs(retry=True) == {}
    assert DEFAULT.prefill == "" and DEFAULT.max_turns is None and DEFAULT.max_seconds is None
    system = DEFAULT.system(False, "NOTES")
    assert "```python" in system and system.endswith(f"NOTES\n\n{prompts.LONG_HORIZON}")
    assert profiles.installed_note() in system
    assert DEFAULT.system(True, "").count("`python` tool") == 1


def test_only_the_default_profile_is_told_how_to_work_long() -> None:
    # Every prompt token of the small profile is read on the CPU; goals and schedules are for
    # models that can use them.
    assert prompts.LONG_HORIZON not in SMALL.system(False, "NOTES")
    assert prompts.LONG_HORIZON in DEFAULT.system(True, "")


def test_small_profile_limits_replies_and_retries_differently() -> None:
    assert SMALL.request_kwargs(retry=False) == {"max_tokens": SMALL.reply_tokens, "stop": ["```"]}
    assert SMALL.request_kwargs(retry=True)["temperature"] == SMALL.retry_temperature
    assert SMALL.prefill == "```python\n"
    assert SMALL.max_turns and SMALL.max_seconds and SMALL.give_up_hint
    # Read in the panel and a cell as well as the CLI: it names a model, not a CLI flag.
    hint = SMALL.give_up_hint.format(model="local/smollm2")
    assert "openai/gpt-4o-mini" in hint and "--model" not in hint


def test_small_prompt_is_short() -> None:
    """System prompt, examples and task stay well under ~600 tokens (about 4 chars a token)."""
    task = "What is the mean of the price column in sales.csv?"
    messages = [
        {"role": "system", "content": SMALL.system(False, "")},
        *SMALL.examples(task, False),
        {"role": "user", "content": SMALL.task(task, None, 0)},
    ]
    chars = sum(len(m["content"]) for m in messages)
    assert chars < 600 * 4 // 2, chars
    assert profiles.installed_note() in messages[0]["content"]
    assert "Already imported: csv, math, re, statistics." in messages[0]["content"]
    assert profiles.HELPERS_NOTE in messages[0]["content"]
    assert all(m.get("name") == "example" for m in messages[1:-1])
    assert SMALL.task("What is the mean of context?", "list", 1) == (
        "Task: What is the mean of context?\n(The variable `context` holds a list.)"
    )


def test_installed_note_names_what_the_kernel_can_import() -> None:
    note = profiles.installed_note()
    for name in ("numpy", "pandas"):
        assert (name in profiles.installed_packages()) == (f"{name}," in note or f"{name}." in note)


def test_cookbook_examples_are_valid_python_that_answers() -> None:
    for task, code in cookbook.EXAMPLES:
        tree = ast.parse(code)
        assert task.strip() and tree.body, task
        calls = {
            n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and hasattr(n.func, "id")
        }
        assert "answer" in calls or "print" in calls, task


def test_closest_examples_match_the_task_kind() -> None:
    def nearest(task: str) -> str:
        return cookbook.closest(task, 3)[-1][0]

    def nearest_code(task: str) -> str:
        return cookbook.closest(task, 3, context=False)[-1][1]

    assert "prime" in nearest("How many primes are below 1000?")
    assert ".csv" in nearest("What is the biggest value of the 'score' column in results.csv?")
    assert "context" in nearest("What is the mean of context?")
    csv_text = "context is CSV text with the columns name, city and age. How many live in Lyon?"
    assert "csv.DictReader(context" in cookbook.closest(csv_text, 3, context=True)[-1][1]
    assert "capital letters" in nearest("Convert 'abc' to uppercase")
    assert "sub-agent" in nearest("Use rlm() on each part of context")
    # What a task names besides words: a date, `n!`, a direction, two units.
    assert "date" in nearest_code("Which day of the week is 3 June 2031?")
    assert "factorial" in nearest_code("What is 9! / 7!?")
    assert "reverse=True" in nearest_code("put 4, 9, 1 from biggest to smallest")
    assert "convert(" in nearest_code("How many grams are in 3 pounds?")
    assert "title()" in nearest_code("capitalise every word of 'big blue sea'")
    # A rank in an order is its own kind: the k-th largest, not the largest, not seconds.
    assert "reverse=True" in nearest_code("Which is the second biggest number in [5, 17, 9]?")
    assert "max(" in nearest_code("What is the largest number in [12, 45, 7]?")
    assert "convert(" in nearest_code("How many seconds are in 3 hours?")
    # Deterministic, nearest last, and never more than asked for.
    assert cookbook.closest("What is 5 + 5?", 3) == cookbook.closest("What is 5 + 5?", 3)
    assert len(cookbook.closest("anything", 2)) == 2
    assert cookbook.closest("anything", 0) == []
    own = [("Count apples.", "answer(1)"), ("Count pears in the basket.", "answer(2)")]
    assert cookbook.closest("pears basket", 1, own) == [own[1]]


def test_a_count_over_a_texts_lines_is_shown_code_that_tests_each_line() -> None:
    """The default model counted log lines with lines.count('WORD') (only lines that are exactly
    the word: 0) or kept one of two conditions; it is shown an example that tests every line
    for both."""
    task = "context is a build log. How many FAILED steps ran for the target docs?"
    shown = cookbook.closest(task, 3, context=True)
    (code,) = [c for _, c in shown if "for line in context.splitlines() if" in c and " and " in c]
    text = "10:01 POST /a kim\n10:02 GET /b kim\n10:03 POST /c ada\n10:04 POST /d kim\n"
    answers: list[object] = []
    exec(code, {"context": text, "answer": answers.append})
    assert answers == [2]  # the two POST lines from kim; lines.count('POST') would be 0


def test_examples_never_hold_the_task_itself() -> None:
    """A copied example must give a visibly wrong answer: examples use their own numbers."""
    tasks = {t for t, _ in cookbook.EXAMPLES}
    assert "Compute the sum of the squares of 1..100" not in tasks
    assert "What is the mean of context?" not in tasks


def test_the_default_local_model_has_its_own_profile() -> None:
    coder = profile_for("local/qwen2.5-coder-0.5b")
    assert coder is profiles.CODER and coder is not SMALL
    assert coder.retry_fresh and coder.no_copies and coder.look is not None
    # What its setup imports, the system prompt says (a model told nothing imports it again).
    namespace: dict[str, object] = {}
    exec(coder.setup, namespace)
    assert {"calendar", "datetime", "date", "timedelta", "convert"} <= set(namespace)
    system = coder.system(False, "")
    assert "Already imported: calendar, csv, datetime, math, re, statistics; date, timedelta" in (
        system
    )
    # A helper is named by its use, not by its module.
    assert "convert('5 ft 3 in', 'cm')" in system and "prime_kernel.kernel" not in system
    assert "small model for offline work" in coder.give_up_hint


def test_the_coder_looks_at_context_and_the_files_a_task_names() -> None:
    look = profiles.look_code
    assert look("What is 2 + 2?", False) == ""
    code = look("Sum the numbers in numbers.txt and data.csv", False)
    assert "overview(None, ['numbers.txt', 'data.csv'], has_context=False)" in code
    assert "overview(context, [], has_context=True)" in look("Mean of context?", True)
    task = profiles.CODER.task("Mean?", "list", 0, "context = [1, 2] (a list of 2 ints)")
    assert task == "Task: Mean?\ncontext = [1, 2] (a list of 2 ints)"


def test_examples_that_use_context_go_only_to_sessions_with_one() -> None:
    task = "How many times does the letter 's' appear in 'mississippi'?"
    without = cookbook.closest(task, 5, context=False)
    assert all("context" not in code for _, code in without)
    with_context = cookbook.closest("How many times does 'x' appear?", 3, context=True)
    assert "context" in with_context[-1][1]
