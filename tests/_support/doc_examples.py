"""Every code example of the documentation, run: README.md and ``docs/**/*.md`` (DEVELOPING.md
"Documentation").

What counts as an example: a fenced block whose language is ``python`` (``py``, ``python3``) or
``pycon`` (``>>>`` sessions, checked as doctests), also as a MyST directive (```` ```{code-block} python````).
The blocks of one page run in order in one namespace, as a reader pasting them one after the other
would (``__name__`` is ``"__main__"``). A block may ``await`` at top level (as in ``python -m asyncio``):
such blocks run on the page's one event loop; the others run outside it, so a script's
``asyncio.run(main())`` works. A function a block defines whose name starts with
``test_`` and that takes no arguments is called after the block, as pytest would call it.

Where it runs (``tests/mock/test_docs_examples.py``): each page in a process of its own, in a fresh
temporary directory, against a fresh ``MockCluster`` whose address is in ``KAFKA_BOOTSTRAP_SERVERS`` -
the variable the examples read, as ``make demo`` does. PySpark examples get this interpreter as
Spark's Python, ``local[2]``, no UI and 127.0.0.1 (``PYSPARK_*``, ``SPARK_LOCAL_IP``).

Opting out: a block that needs what no test has - a real cluster at a real address, its CA and
credentials, a cloud provider's SDK - is preceded by a visible comment saying so, on the line just
before the fence (blank lines allowed)::

    <!-- no-test: needs a real cluster with SCRAM over TLS -->

Such a block is still compiled, so that its syntax stays right. A ``no-test`` without a reason is an
error.

``python -m tests._support.doc_examples PAGE`` runs one page's examples (what the test does in its
child process); ``--list`` prints every block found, with its line and whether it runs.
"""

from __future__ import annotations

import ast
import asyncio
import doctest
import inspect
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "Block", "ExampleFailed", "blocks", "compile_block", "pages", "run_page"]

ROOT = Path(__file__).resolve().parents[2]

_LANGUAGES = {"python": "python", "py": "python", "python3": "python", "pycon": "pycon"}
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"^\{(?:code-block|code|sourcecode)\}\s+(?P<lang>\S+)")
_NO_TEST = re.compile(r"^\s*<!--\s*no-test(?P<sep>:?)(?P<reason>.*?)-->\s*$")
_DIRECTIVE_OPTION = re.compile(r"^:[\w-]+:")


@dataclass(frozen=True)
class Block:
    """One example: where it is, its code (dedented), its language, and why it does not run."""

    path: Path
    line: int  # 1-based line of the block's first line of code in ``path``
    code: str
    language: str  # "python" or "pycon"
    skip_reason: str | None = None

    @property
    def where(self) -> str:
        return f"{_shown(self.path)}:{self.line}"


class ExampleFailed(AssertionError):
    """An example raised, or a ``pycon`` example printed something else than it shows."""


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page of docs/ (not the build's output)."""
    docs = root / "docs"
    found = [p for p in sorted(docs.rglob("*.md")) if "_build" not in p.relative_to(docs).parts]
    readme = root / "README.md"
    return ([readme] if readme.exists() else []) + found


def blocks(path: Path) -> list[Block]:
    """The examples of one Markdown page, in order."""
    return list(_blocks(path, path.read_text(encoding="utf-8").splitlines()))


def _blocks(path: Path, lines: list[str]) -> Iterator[Block]:
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        info = opening["info"].strip()
        end = i + 1  # the closing fence: the same character, at least as long, nothing after it
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        language = _language(info)
        if language is not None:
            body = [_dedent(line, indent) for line in lines[i + 1 : end]]
            first = 0
            if info.startswith("{"):  # a MyST directive: its options come first
                while first < len(body) and _DIRECTIVE_OPTION.match(body[first]):
                    first += 1
                if first and first < len(body) and not body[first].strip():
                    first += 1
            yield Block(path, i + 2 + first, "\n".join(body[first:]) + "\n", language,
                        _skip_reason(path, lines, i))
        i = end + 1


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def _language(info: str) -> str | None:
    directive = _DIRECTIVE.match(info)
    word = directive["lang"] if directive else (info.split() or [""])[0]
    if info.startswith("{") and not directive:
        return None
    return _LANGUAGES.get(word.lower())


def _dedent(line: str, indent: int) -> str:
    """Remove the fence's indentation (up to ``indent`` spaces), as CommonMark does."""
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, indent):]


def _skip_reason(path: Path, lines: list[str], fence_index: int) -> str | None:
    j = fence_index - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    marker = _NO_TEST.match(lines[j]) if j >= 0 else None
    if marker is None:
        return None
    reason = marker["reason"].strip()
    if not marker["sep"] or not reason:
        raise ValueError(
            f"{_shown(path)}:{j + 1}: say why the example cannot run: <!-- no-test: needs ... -->")
    return reason


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def compile_block(block: Block) -> Any:
    """The block's code object, its line numbers those of the page (a traceback points into it).
    ``pycon`` blocks compile each ``>>>`` statement."""
    if block.language == "pycon":
        for example in doctest.DocTestParser().get_examples(block.code):
            compile(example.source, block.where, "single", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                    dont_inherit=True)
        return None
    source = "\n" * (block.line - 1) + block.code
    return compile(source, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def run_page(path: Path) -> int:
    """Run the page's examples in order in one namespace; returns how many ran. Raises
    :class:`ExampleFailed` naming the example (file and line) that failed."""
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(path)}
    loop = asyncio.new_event_loop()
    ran = 0
    try:
        for block in blocks(path):
            code = compile_block(block)
            if block.skip_reason is not None:
                continue
            before = set(namespace)
            try:
                if block.language == "pycon":
                    _run_doctest(block, namespace)
                else:
                    _run(code, namespace, loop)
                    for name in sorted(set(namespace) - before):
                        _call_if_test(name, namespace[name], block, loop)
            except ExampleFailed:
                raise
            except BaseException as exc:
                raise ExampleFailed(f"the example at {block.where} raised {exc!r}") from exc
            ran += 1
    finally:
        _close_leftovers(namespace, loop)
    return ran


def _run(code: Any, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
    result = eval(code, namespace)  # the documentation's own examples
    if inspect.iscoroutine(result):  # a block with a top-level await
        loop.run_until_complete(result)


def _call_if_test(name: str, value: Any, block: Block, loop: asyncio.AbstractEventLoop) -> None:
    if not (name.startswith("test_") and inspect.isfunction(value)):
        return
    if inspect.signature(value).parameters:
        raise ExampleFailed(f"{block.where}: {name}() takes arguments (fixtures); the runner passes none")
    result = value()
    if inspect.iscoroutine(result):
        loop.run_until_complete(result)


def _run_doctest(block: Block, namespace: dict[str, Any]) -> None:
    test = doctest.DocTestParser().get_doctest(block.code, namespace, block.where, str(block.path),
                                               block.line - 1)
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=out.append, clear_globs=False)
    namespace.update(test.globs)  # the DocTest ran on a copy
    if result.failed:
        raise ExampleFailed(f"the example at {block.where} printed something else:\n{''.join(out)}")


def _close_leftovers(namespace: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
    """What a page left running: its event loop's tasks and a SparkSession (the page's process ends
    anyway; this lets it end without errors from half-closed machinery)."""
    try:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    if "pyspark.sql" in sys.modules:
        session = sys.modules["pyspark.sql"].SparkSession.getActiveSession()
        if session is not None:
            session.stop()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for page in [Path(p) for p in argv[1:]] or pages():
            for block in blocks(page):
                print(f"{block.where}: {block.language}" + (f" (no-test: {block.skip_reason})"
                                                            if block.skip_reason else ""))
        return 0
    if len(argv) != 1:
        print("usage: python -m tests._support.doc_examples PAGE | --list [PAGE...]", file=sys.stderr)
        return 2
    ran = run_page(Path(argv[0]))
    print(f"{argv[0]}: {ran} example(s) passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
