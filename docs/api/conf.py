"""Sphinx configuration of the API reference (``sphinx-build -W -b html docs/api OUT``)."""

project = "dpknn"
author = "dpknn developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.autosummary"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autosummary_generate = False
# Optional extras (torch for DP-MisGAN, matplotlib for figures) are imported lazily by the package;
# nothing here needs them.
autodoc_mock_imports = ["torch"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
napoleon_use_ivar = True
# Document each object once, in the module that defines it (packages re-export names in __all__).
autodoc_default_options["ignore-module-all"] = True

import re  # noqa: E402


def _plain_text_references(app, what, name, obj, options, lines):
    """The docstrings are written to be read as text: ``.. [1]`` reference lists and ``|x|``
    absolute values. Render them as such (a bullet list of references, literal bars), so that
    Sphinx does not read them as citation targets (repeated on one page) or substitutions."""
    ref_indent = None
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)\.\. \[(\d+)\](.*)$", line)
        if m:
            ref_indent = len(m.group(1))
            line = f"{m.group(1)}- [{m.group(2)}]{m.group(3)}"
        elif ref_indent is not None and line.strip() and len(line) - len(line.lstrip()) > ref_indent:
            line = " " * (ref_indent + 2) + line.lstrip()
        elif line.strip():
            ref_indent = None
        line = re.sub(r"\[(\d+)\]_", r"[\1]", line)
        lines[i] = line.replace("|", r"\|")


def _skip_generated(app, what, name, obj, skip, options):
    """scikit-learn generates ``set_*_request`` methods on estimators; they are not dpknn's API."""
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _plain_text_references)
    app.connect("autodoc-skip-member", _skip_generated)

# Fitted attributes end in "_", which reStructuredText reads as a link to the name without it; where
# several classes define that name the link is ambiguous. The text is right either way.
suppress_warnings = ["ref.python"]
