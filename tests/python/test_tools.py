"""Tool calls with bad arguments: a readable tool error (isError), never a protocol error."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602

# (tool, arguments, a word the message must contain so a reader can tell what was wrong)
BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("list_procedures", {"offset": "x"}, '"x"'),
    ("list_procedures", {"limit": "ten"}, '"ten"'),
    ("list_procedures", {"offset": -1}, "-1"),
    ("list_procedures", {"document": 5}, "5"),
    ("search_procedures", {"query": 12}, "12"),
    ("search_procedures", {}, "query"),
    ("open_binary", {}, "path"),
    ("open_binary", {"path": ["/usr/bin/ls"]}, "sequence"),
    ("get_evidence", {"evidence_id": "nope"}, "nope"),
    ("record_unknown", {"question": {"text": "q"}}, "map"),
    ("update_unknown", {"unknown_id": "unk_0123456789abcdef01234567", "expected_revision": "one", "status": "open"}, '"one"'),
    ("update_unknown", {"unknown_id": "unk_x", "expected_revision": 1, "status": "open"}, "unk_x"),
    ("update_unknown", {"unknown_id": "unk_0123456789abcdef01234567", "expected_revision": 1, "status": "done"}, "done"),
    ("list_evidence", {"offset": 1.5}, "1.5"),
]


@pytest.mark.parametrize(("tool", "arguments", "mentions"), BAD_ARGUMENTS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_ARGUMENTS)])
async def test_tool_argument_type_errors_are_tool_results(connect, mode, tool, arguments, mentions):
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        before = await rea.tool("binary_session")

        result = await rea.call(tool, arguments)
        assert result.is_error is True
        message = rea.text(result)
        assert message.strip(), "the error must say what is wrong"
        assert mentions in message, f"message does not point at the bad input: {message!r}"
        assert len(message) < 2000 and "panicked" not in message and "stack backtrace" not in message

        # Bad input changes nothing, and the server keeps serving.
        after = await rea.tool("binary_session")
        assert after["evidence"] == before["evidence"]
        assert after["unresolved_unknowns"] == before["unresolved_unknowns"]
        page = await rea.tool("list_procedures", {"offset": 0, "limit": 1})
        assert page["total"] > 0


async def test_tool_errors_without_a_session_are_readable(connect, mode):
    async with connect(mode) as rea:
        for tool, arguments in (
            ("list_procedures", {}),
            ("list_documents", {}),
            ("get_evidence", {"evidence_id": "ev_" + "0" * 64}),
            ("record_unknown", {"question": "why?"}),
            ("close_binary", {}),
        ):
            result = await rea.call(tool, arguments)
            assert result.is_error is True, tool
            assert "open" in rea.text(result).lower() or "session" in rea.text(result).lower(), rea.text(result)


async def test_unknown_tool_is_invalid_params(connect, mode):
    async with connect(mode) as rea:
        error = await rea.expect_error(INVALID_PARAMS, rea.client.call_tool("no_such_tool", {}))
        assert "no_such_tool" in error.error.message
