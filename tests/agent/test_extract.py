"""Code and edit extraction from model replies: what is taken, what is refused, and what is reported."""

from __future__ import annotations

from adaexplore.agent import apply_edits, extract_code, parse_edits, rule_from_reply, syntax_problem

MODULE = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n"


def test_a_python_block_is_taken() -> None:
    extracted = extract_code(f"Here it is:\n```python\n{MODULE}```\nDone.")
    assert extracted.code == MODULE
    assert extracted.problem is None and not extracted.unterminated


def test_py_and_untagged_blocks_are_taken_but_other_languages_are_not() -> None:
    assert extract_code(f"```py\n{MODULE}```").code == MODULE
    assert extract_code(f"```\n{MODULE}```").code == MODULE
    refused = extract_code(f"```cpp\n{MODULE}```")
    assert refused.code is None and "no fenced" in (refused.problem or "")


def test_the_block_defining_modelnew_wins_over_an_earlier_sketch() -> None:
    reply = f"A sketch:\n```python\nx = tl.load(ptr)\n```\nThe module:\n```python\n{MODULE}```\n"
    assert extract_code(reply).code == MODULE


def test_without_modelnew_the_longest_block_is_taken() -> None:
    reply = "```python\na = 1\n```\n```python\nb = 2\nc = 3\n```\n"
    assert extract_code(reply).code == "b = 2\nc = 3\n"


def test_a_reply_without_a_fence_is_not_code() -> None:
    extracted = extract_code(MODULE)
    assert extracted.code is None
    assert extract_code("   ").problem == "the reply was empty"


def test_an_unterminated_block_is_flagged() -> None:
    extracted = extract_code("```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self")
    assert extracted.unterminated
    assert extracted.code is not None and syntax_problem(extracted.code) is not None


def test_syntax_problem_names_the_line() -> None:
    assert syntax_problem(MODULE) is None
    problem = syntax_problem("x = (1,\ny = 2\n")
    assert problem is not None and "line" in problem


def test_edits_are_parsed_in_order_and_applied_in_sequence() -> None:
    code = "a = 1\nb = 2\nc = 3\n"
    reply = (
        "<reasoning_1>why</reasoning_1>\n<old_str_1>\nb = 2\n</old_str_1>\n<new_str_1>\nb = 20\n</new_str_1>\n"
        "<old_str_2>\nb = 20\nc = 3\n</old_str_2>\n<new_str_2>\nb = 20\nc = 30\n</new_str_2>\n"
    )
    edits = parse_edits(reply)
    assert [e.number for e in edits] == [1, 2]
    report = apply_edits(code, edits)
    assert report.code == "a = 1\nb = 20\nc = 30\n"
    assert report.applied == 2 and not report.failures()


def test_trailing_whitespace_differences_are_tolerated() -> None:
    code = "def f():   \n    return 1  \n"
    report = apply_edits(
        code,
        parse_edits(
            "<old_str_1>\ndef f():\n    return 1\n</old_str_1><new_str_1>\ndef f():\n    return 2\n</new_str_1>"
        ),
    )
    assert report.applied == 1
    assert "return 2" in report.code


def test_edits_that_do_not_apply_are_reported_not_dropped() -> None:
    code = "x = 1\nx = 1\ny = 2\n"
    reply = (
        "<old_str_1>\nx = 1\n</old_str_1><new_str_1>\nx = 5\n</new_str_1>"
        "<old_str_2>\nz = 9\n</old_str_2><new_str_2>\nz = 0\n</new_str_2>"
        "<old_str_3>\ny = 2\n</old_str_3><new_str_3>\ny = 3\n</new_str_3>"
    )
    report = apply_edits(code, parse_edits(reply))
    assert report.code == "x = 1\nx = 1\ny = 3\n"
    assert [o.number for o in report.failures()] == [1, 2]
    text = report.describe_failures()
    assert "edit 1: the old text occurs 2 times" in text
    assert "edit 2: the old text was not found" in text


def test_a_pair_with_mismatched_numbers_is_not_an_edit() -> None:
    assert parse_edits("<old_str_1>\na\n</old_str_1><new_str_2>\nb\n</new_str_2>") == []


def test_rule_from_reply() -> None:
    assert rule_from_reply("Thinking…\nYou cannot call tl.float32 as a function; use .to(tl.float32).") == (
        "You cannot call tl.float32 as a function; use .to(tl.float32)."
    )
    assert rule_from_reply("- `You cannot index a tensor with a Python list inside @triton.jit.`") is not None
    assert rule_from_reply("no guidance") is None
    assert rule_from_reply("No guidance.") is None
    assert rule_from_reply("Maybe avoid tl.where here.") is None
    assert rule_from_reply("") is None
