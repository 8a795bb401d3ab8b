"""Sphinx configuration of the documentation site (``make docs``; DEVELOPING.md "Documentation").

Sphinx with the Furo theme and MyST-Parser (Markdown pages): the library's docstrings are reST with
Sphinx roles, which autodoc renders as they are (docs/contributing.md says why not MkDocs). The build
is strict (``-W --keep-going -n``): a broken link, a missing reference or bad reST in a docstring
fails it. Nothing is fetched at build time (no intersphinx: CI reaches package registries only), so
the types of other libraries and of the standard library that appear in signatures are listed in
``nitpick_ignore_regex`` by module, one module at a time.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

project = "txnproducer"
author = "the txnproducer authors"
copyright = "the txnproducer authors; Apache-2.0"
release = importlib.metadata.version("txnproducer")
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
nitpicky = True

# --- Markdown (MyST) --------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
# `[Errors](#errors)`: every heading down to H3 gets the slug GitHub gives it, so a page links to a
# section of its own or of another page (`[x](/guide/errors.md#errors)`) as it would on GitHub.
myst_heading_anchors = 3

# --- API reference (autodoc) ------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
python_use_unqualified_type_names = True
# txnproducer.spark's data source subclasses PySpark's: without the spark extra the reference still
# builds (with PySpark's classes mocked, the sink's two classes show no constructor arguments)
autodoc_mock_imports = [name for name in ("pyspark", "pyarrow") if importlib.util.find_spec(name) is None]
add_module_names = False

# Types from outside txnproducer that appear in signatures and have no page here (no intersphinx).
# Listed by module, so that a typo in one of our own names still fails the build.
_EXTERNAL_MODULES = (
    "collections.abc",
    "concurrent.futures",
    "asyncio",
    "threading",
    "ssl",
    "logging",
    "pathlib",
    "types",
    "kafka",
    "pyspark",
    "pyarrow",
    "aiokafka",
    "opentelemetry",
)
# Not exported, but in the signature of something that is: the argument or value is used as it comes.
nitpick_ignore = [
    ("py:class", "txnproducer.admin.settings.AdminSettings"),  # TransactionsAdmin(settings): a mapping works
    ("py:class", "txnproducer.testing.cluster_state.TopicState"),  # what MockCluster.create_topic returns
    ("py:class", "Headers"),  # ConsumerRecord.headers: a sequence of (str, bytes | None)
]
nitpick_ignore_regex = [
    (r"py:(class|exc|data|obj|func|meth|attr)", rf"{re.escape(module)}(\..+)?")
    for module in _EXTERNAL_MODULES
]

# --- HTML -------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"txnproducer {release}"
html_show_sourcelink = False


# --- re-exported names --------------------------------------------------------------------------------
def _resolve_reexports(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement
) -> nodes.Element | None:
    """A class is documented where users import it (``txnproducer.ProducerConfig``), but signatures and
    some docstrings name the module that defines it (``txnproducer.config.ProducerConfig``): resolve such
    a reference to the documented name of the same object. Only objects documented here resolve."""
    if node.get("refdomain") != "py":
        return None
    target, module, cls = node["reftarget"], node.get("py:module"), node.get("py:class")
    candidates = [target, f"{module}.{target}"]
    if cls:  # a name in a class's signature or docstring: as the module that defines the class sees it
        defined_in = getattr(_import(f"{module}.{cls}"), "__module__", None)
        candidates.append(f"{defined_in}.{target}")
    obj = next((o for o in map(_import, candidates) if o is not None), None)
    if obj is None:
        return None
    documented = _documented_by_identity(env).get(id(obj))
    if documented is None or documented == target:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], documented, node, contnode)


def _import(dotted: str) -> Any:
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except (AttributeError, ImportError):  # txnproducer.spark's classes need PySpark
            return None
        return obj
    return None


_DOCUMENTED: dict[int, str] = {}


def _documented_by_identity(env: BuildEnvironment) -> dict[int, str]:
    if not _DOCUMENTED:
        for name, _display, objtype, _doc, _anchor, _prio in env.get_domain("py").get_objects():
            if objtype in ("class", "enum", "exception", "function", "data"):
                obj = _import(name)
                if obj is not None:
                    _DOCUMENTED.setdefault(id(obj), name)
    return _DOCUMENTED


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("missing-reference", _resolve_reexports)
    return {"parallel_read_safe": True}
