"""The documentation's example runner (``tests/_support/doc_examples.py``): what it finds, what it
runs, and that a broken example fails it, naming the Markdown line. The examples themselves run in
``tests/mock/test_docs_examples.py``; here every one of them, the opted-out ones too, must compile."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from tests._support.doc_examples import ROOT, Block, ExampleFailed, blocks, compile_block, pages, run_page


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_compiles(page: Path) -> None:
    for block in blocks(page):
        compile_block(block)  # raises SyntaxError naming the page and line


def test_the_pages_are_readme_and_docs_without_the_build(tmp_path: Path) -> None:
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "_build" / "html").mkdir(parents=True)
    for name in ("README.md", "docs/index.md", "docs/guide/a.md", "docs/_build/html/copy.md", "docs/x.rst"):
        (tmp_path / name).write_text("text\n")
    found = [p.relative_to(tmp_path).as_posix() for p in pages(tmp_path)]
    assert found == ["README.md", "docs/guide/a.md", "docs/index.md"]


def test_finds_python_blocks_with_their_lines(tmp_path: Path) -> None:
    page = _page(tmp_path, """# Title

```python
a = 1
```

~~~py
b = 2
~~~

```text
not python
```

````markdown
```python
inside another block: not an example
```
````

- a list item:

  ```python
  c = 3
  ```

```{code-block} python
:caption: a MyST directive

d = 4
```

```pycon
>>> 1 + 1
2
```
""")
    found = [(b.line, b.language, b.code) for b in blocks(page)]
    assert found == [
        (4, "python", "a = 1\n"),
        (8, "python", "b = 2\n"),
        (24, "python", "c = 3\n"),
        (30, "python", "d = 4\n"),
        (34, "pycon", ">>> 1 + 1\n2\n"),
    ]


def test_no_test_needs_a_reason_and_the_line_just_before(tmp_path: Path) -> None:
    page = _page(tmp_path, """<!-- no-test: needs a real cluster -->

```python
x = 1
```

<!-- no-test: needs a real cluster -->
A paragraph between the marker and the block: the marker is not the block's.

```python
y = 2
```
""")
    assert [b.skip_reason for b in blocks(page)] == ["needs a real cluster", None]
    for marker in ("<!-- no-test -->", "<!-- no-test: -->", "<!-- no-test:    -->"):
        bare = _page(tmp_path, f"{marker}\n```python\nx = 1\n```\n")
        with pytest.raises(ValueError, match=r"page.md:1: say why"):
            blocks(bare)


def test_blocks_share_a_namespace_and_opted_out_blocks_do_not_run(tmp_path: Path) -> None:
    page = _page(tmp_path, """```python
total = 1
```

<!-- no-test: would fail -->
```python
raise RuntimeError("not run")
```

```python
total += 1
assert total == 2
```
""")
    assert run_page(page) == 2


def test_a_failing_example_fails_naming_its_line(tmp_path: Path) -> None:
    page = _page(tmp_path, """Text.

```python
x = 1
```

```python
y = x + 1
assert y == 3, "wrong"
```
""")
    with pytest.raises(ExampleFailed, match=r"page.md:8 raised AssertionError\('wrong'\)") as info:
        run_page(page)
    frame = traceback.extract_tb(info.value.__cause__.__traceback__)[-1]
    assert (Path(frame.filename), frame.lineno, frame.line) == (page, 9, 'assert y == 3, "wrong"')


def test_an_opted_out_block_must_still_compile(tmp_path: Path) -> None:
    page = _page(tmp_path, "<!-- no-test: needs a cluster -->\n```python\ndef f(:\n```\n")
    with pytest.raises(SyntaxError) as info:
        run_page(page)
    assert info.value.lineno == 3


def test_top_level_await_runs_on_one_loop_per_page(tmp_path: Path) -> None:
    page = _page(tmp_path, """```python
import asyncio

loop = asyncio.get_running_loop()
await asyncio.sleep(0)
```

```python
await asyncio.sleep(0)
assert asyncio.get_running_loop() is loop
```

```python
async def main():
    return 7

assert asyncio.run(main()) == 7     # a block without await runs outside the page's loop
```
""")
    assert run_page(page) == 3


def test_test_functions_a_block_defines_are_called(tmp_path: Path) -> None:
    page = _page(tmp_path, """```python
calls = []

def test_records_a_call():
    calls.append(1)

async def test_also_coroutines():
    calls.append(2)

def helper_not_a_test():
    raise AssertionError("not called")
```

```python
assert calls == [2, 1]
```
""")
    assert run_page(page) == 2
    failing = _page(tmp_path, "```python\ndef test_fails():\n    assert False, 'it ran'\n```\n")
    with pytest.raises(ExampleFailed, match="it ran"):
        run_page(failing)
    fixtures = _page(tmp_path, "```python\ndef test_wants(tmp_path):\n    pass\n```\n")
    with pytest.raises(ExampleFailed, match=r"test_wants\(\) takes arguments"):
        run_page(fixtures)


def test_pycon_blocks_are_doctests(tmp_path: Path) -> None:
    good = _page(tmp_path, "```pycon\n>>> n = 20\n>>> n + 1\n21\n```\n\n```python\nassert n == 20\n```\n")
    assert run_page(good) == 2
    bad = _page(tmp_path, "```pycon\n>>> 1 + 1\n3\n```\n")
    with pytest.raises(ExampleFailed, match=r"page.md:2 printed something else"):
        run_page(bad)


def test_block_where_is_relative_to_the_repository() -> None:
    assert Block(ROOT / "README.md", 12, "", "python").where == "README.md:12"
