"""The agent loop's decisions between turns (prime_kernel/daemon/policy.py)."""

from __future__ import annotations

from prime_kernel.daemon import policy
from prime_kernel.daemon.policy import CellRun


def test_only_labelled_python_fences_run() -> None:
    reply = (
        "Let me compute it.\n"
        "```python\nx = 2\nprint(x)\n```\n"
        "This will print:\n```\n2\n```\n"
        "And in the shell:\n```bash\nls\n```\n"
        "```py\ny = 3\n```\n"
        "```Python3\nz = 4\n```\n"
        "```python\n\n```"
    )
    assert policy.code_blocks(reply) == ["x = 2\nprint(x)", "y = 3", "z = 4"]
    assert policy.code_blocks("no code at all") == []
    assert policy.code_blocks(None) == []
    # An unclosed fence is not code: the reply was cut off mid-block.
    assert policy.code_blocks("```python\nprint(1)\n") == []


def test_complete_reply_closes_the_fence_the_prefill_opened() -> None:
    assert policy.complete_reply("", "plain text") == "plain text"
    # The stop sequence (the closing fence) is not part of what the model returns.
    assert policy.complete_reply("```python\n", "answer(1)\n") == "```python\nanswer(1)\n```"
    assert (
        policy.complete_reply("```python\nanswer(", "41 + 1)") == "```python\nanswer(41 + 1)\n```"
    )
    # A provider that keeps the stop sequence: nothing is added.
    assert policy.complete_reply("```python\n", "answer(1)\n```") == "```python\nanswer(1)\n```"
    assert policy.code_blocks(policy.complete_reply("```python\n", "x = 1")) == ["x = 1"]


def test_answer_prefill() -> None:
    assert policy.answer_prefill("```python\n") == "```python\nanswer("
    assert policy.answer_prefill("") == "```python\nanswer("


def test_printed_result_is_the_last_line_of_a_clean_turn() -> None:
    assert policy.printed_result([CellRun("print(12 + 30)", "42\n", True)]) == "42"
    assert policy.printed_result([CellRun("x", "a\nb\n\n", True)]) == "b"
    assert policy.printed_result([CellRun("print([1, 2])", "[1, 2]\n", True)]) == "[1, 2]"
    # Nothing printed, an error, or only our own note: nothing to answer with.
    assert policy.printed_result([CellRun("x = 1", "[no output]", True)]) is None
    assert policy.printed_result([CellRun("plot()", "[display data: image/png]\n", True)]) is None
    assert (
        policy.printed_result([CellRun("1/0", "ZeroDivisionError: division by zero", False)])
        is None
    )
    assert (
        policy.printed_result([CellRun("print(1)", "1", True), CellRun("1/0", "E", False)]) is None
    )
    assert policy.printed_result([]) is None
    # A long line is output to read, not a value to answer with.
    assert policy.printed_result([CellRun("print('z' * 500)", "z" * 500, True)]) is None


def test_answer_nudge_offers_the_call_to_make() -> None:
    assert "answer(42)" in policy.answer_nudge("42")
    assert "answer([1, 2])" in policy.answer_nudge("[1, 2]")
    # Text that is not a Python literal is offered as a string.
    assert "answer('HELLO WORLD')" in policy.answer_nudge("HELLO WORLD")


def test_repeats_counts_trailing_turns_seen_before() -> None:
    a = policy.turn_key([CellRun("print(1)", "1", True)])
    a_spaced = policy.turn_key([CellRun("print(1)  \n", "1", True)])
    b = policy.turn_key([CellRun("print(2)", "2", True)])
    polled = policy.turn_key([CellRun("print(1)", "still running", True)])
    assert a == a_spaced
    assert policy.repeats([]) == 0
    assert policy.repeats([a]) == 0
    assert policy.repeats([a, b]) == 0
    assert policy.repeats([a, a]) == 1
    assert policy.repeats([a, a, a]) == 2
    assert policy.repeats([a, b, a]) == 1
    assert policy.repeats([a, a, b]) == 0
    # The same code with new output (polling a child) is not a repeat.
    assert policy.repeats([a, polled]) == 0


def test_error_hints_name_the_fix() -> None:
    hint = policy.error_hint("TypeError: unsupported operand type(s) for +: 'int' and 'str'")
    assert hint and "float(x)" in hint
    assert "float(x)" in (
        policy.error_hint('TypeError: can only concatenate str (not "int")') or ""
    )
    hint = policy.error_hint("NameError: name 'notebook' is not defined")
    assert hint and "'notebook' in quotes" in hint
    # A file's name written as a variable: the hint names the file.
    code = "answer(sum(int(x) for x in numbers.txt.split(';')))"
    hint = policy.error_hint("NameError: name 'numbers' is not defined", code)
    assert hint == "numbers.txt is a file, not a variable: read it with open('numbers.txt')."
    hint = policy.error_hint("FileNotFoundError: [Errno 2] No such file or directory: 'orders.csv'")
    assert hint and "'orders.csv'" in hint
    assert "first row" in (policy.error_hint("KeyError: 'name'") or "")
    # A task whose data came as `context`: the file the model made up is not to be found
    # anywhere, so the hint names the variable (it had opened 'people.csv' three times).
    missing = "FileNotFoundError: [Errno 2] No such file or directory: 'people.csv'"
    hint = policy.error_hint(missing, "open('people.csv')", "str") or ""
    assert "'people.csv'" in hint and "variable context" in hint and "csv.DictReader" in hint
    hint = policy.error_hint(missing, "open('people.csv')", "list") or ""
    assert "variable context, a list." in hint
    assert "the file the task names" in (policy.error_hint(missing, "open('people.csv')") or "")
    compared = "TypeError: '>' not supported between instances of 'str' and 'int'"
    assert "float(x)" in (policy.error_hint(compared) or "")
    joined = "ValueError: invalid literal for int() with base 10: '75;51;7'"
    assert "split it on ';' first" in (policy.error_hint(joined) or "")
    assert policy.error_hint("ValueError: invalid literal for int() with base 10: 'x'") is None
    # index() of a word in a list of lines: the hint says to loop and test containment.
    hint = policy.error_hint("ValueError: 'needle' is not in list") or ""
    assert "enumerate(items, 1)" in hint and "'needle' in item" in hint
    assert policy.error_hint("ZeroDivisionError: division by zero") is None
    assert policy.error_hint("42") is None


def test_a_failed_turn_is_left_out_of_a_clean_retry() -> None:
    task = {"role": "user", "content": "Task: sum it"}
    ok_reply = {"role": "assistant", "content": "```python\nprint(1)\n```"}
    ok_output = {"role": "user", "content": "Output of your code:\n1"}
    bad_reply = {"role": "assistant", "content": "```python\nanswer(x)\n```"}
    bad_output = {"role": "user", "content": "Output of your code:\nNameError: x"}
    messages = [task, ok_reply, ok_output, bad_reply, bad_output]
    failed = {id(bad_reply), id(bad_output)}
    shown = policy.without_failed_turns(messages, failed, "Your previous code failed: x")
    assert shown[:2] == [task, ok_reply]
    assert shown[2]["content"] == "Output of your code:\n1\n\nYour previous code failed: x"
    assert ok_output["content"] == "Output of your code:\n1"  # the conversation is unchanged
    # A later turn that went well: the failed one stays out, with nothing more to say.
    later = [*messages, {"role": "assistant", "content": "..."}, {"role": "user", "content": "2"}]
    assert policy.without_failed_turns(later, failed, "") == [task, ok_reply, ok_output, *later[5:]]


def test_an_example_copied_whole_is_refused_only_where_its_values_are_not_the_tasks() -> None:
    example = "answer('jupyter'[::-1])"
    assert policy.copies_example("answer( 'jupyter'[::-1] )", example, "Reverse 'notebook'.")
    # The task's own values, or code with no values: the copy is right as it is.
    assert not policy.copies_example(example, example, "Reverse 'jupyter', please.")
    assert not policy.copies_example("answer(max(context))", "answer(max(context))", "Max?")
    assert not policy.copies_example("answer('notebook'[::-1])", example, "Reverse 'notebook'.")


def test_a_literal_assigned_to_context_is_told_apart_from_work_on_it() -> None:
    assert policy.overwrites_context("context = 'name,city\\nAda,Lille'")
    assert policy.overwrites_context("import csv\ncontext: list = [1, 2, 3]\nanswer(sum(context))")
    assert policy.overwrites_context("if True:\n    context = {'a': (1, 2)}")
    for code in (
        "context = context.strip()",
        "context = json.loads(context)",
        "rows = 'a,b'",
        "answer(len(context)",  # not Python: the kernel says so
    ):
        assert not policy.overwrites_context(code), code
