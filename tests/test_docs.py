"""Every example in docs/ runs: Python blocks execute, TOML blocks load as what they claim to be,
console commands exit 0, in order, in an empty folder per page; the CLI reference names every
option of every command."""

import argparse
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from cli_run import run

from dpknn import Schema
from dpknn.cli._main import build_parser
from dpknn.processing._pipeline import ProcessingPlan
from dpknn.releases._queryfile import read_queries
from dpknn.schema._discretization import read_attributes

DOCS = Path(__file__).resolve().parent.parent / "docs"
IPUMS = Path(os.environ.get("DPKNN_IPUMS_DATA", Path(__file__).resolve().parents[2] / "shared" / "data" / "ipums"))
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)


def blocks(page):
    for lang, info, body in FENCE.findall(page.read_text()):
        attrs = dict(part.split("=", 1) for part in info.split() if "=" in part)
        yield lang, attrs, body


# Pages whose examples include blocks marked ``needs=torch`` (the DP-MisGAN examples).
TORCH_PAGES = sorted(p for p in DOCS.glob("*.md") if any(a.get("needs") == "torch" for _, a, _ in blocks(p)))


# The walk-through runs once, in test_walkthrough_ends_in_a_publishable_release, which also checks its outputs.
# distributed.md starts local Dask clusters for its examples (25 s, the slowest test of the README's command): its
# examples run in CI's slow step (pytest -m slow), so that the README's test command keeps its margin under 5 min.
SLOW_PAGES = {"distributed.md"}


@pytest.mark.parametrize("page", [pytest.param(p, marks=[pytest.mark.slow] if p.name in SLOW_PAGES else [])
                                  for p in sorted(DOCS.glob("*.md")) if p.name != "walkthrough.md"],
                         ids=lambda p: p.name)
def test_examples_run(page, tmp_path, monkeypatch, *, with_torch=False):
    """Every block, but those marked ``needs=torch``: the README's test command runs without the
    optional extras, and the torch blocks run in :func:`test_torch_examples_run` (marked slow)."""
    monkeypatch.chdir(tmp_path)
    namespace, schema, ran = {}, None, 0
    for n, (lang, attrs, body) in enumerate(blocks(page)):
        where = f"{page.name} block {n + 1}"
        if attrs.get("needs") == "torch" and not with_torch:
            continue
        if attrs.get("needs") == "ipums":
            # The real IPUMS extracts are not in the repository (IPUMS's conditions); their blocks run where
            # the folder is (DPKNN_IPUMS_DATA, default shared/data/ipums beside the repository).
            if not (IPUMS / "cps_00006.xml").exists():
                continue
            for name in ("cps_00006.xml", "cps_00006.dat.gz"):
                if not (tmp_path / name).exists():
                    shutil.copy(IPUMS / name, tmp_path / name)
        if lang == "python":
            exec(compile(body, where, "exec"), namespace)
        elif lang == "toml":
            path = tmp_path / attrs.get("file", f"block{n}.toml")
            path.write_text(body)
            kind = attrs.get("kind")
            if kind == "schema":
                schema = Schema.from_file(path)
            elif kind == "queries":
                if "schema" in attrs:  # a schema file an earlier example wrote
                    schema = Schema.from_file(tmp_path / attrs["schema"])
                assert schema is not None, f"{where}: a queries block needs a schema block before it"
                read_queries(path, schema)
            elif kind == "steps":
                ProcessingPlan.from_file(path)
            elif kind == "attributes":
                read_attributes(path)
            else:
                pytest.fail(f"{where}: a toml block needs kind=schema, queries, steps or attributes")
        elif lang == "console":
            for line in body.splitlines():
                if not line.startswith("$ "):
                    continue
                args = shlex.split(line[2:])
                assert args[0] == "dpknn", f"{where}: {line}"
                res = run(*args[1:], cwd=tmp_path)   # main() in process, as test_cli does
                assert res.returncode == 0, f"{where}: {line}\n{res.stderr}"
        else:
            continue
        ran += 1
    if page.name in ("walkthrough.md", "schema.md", "processing.md", "queries.md", "report.md", "synthesis.md"):
        assert ran >= 1, f"{page.name}: no example ran"


@pytest.mark.slow
@pytest.mark.parametrize("page", TORCH_PAGES, ids=lambda p: p.name)
def test_torch_examples_run(page, tmp_path, monkeypatch):
    """The pages with DP-MisGAN examples, whole (skipped without torch: ``pip install torch==2.13.0``)."""
    pytest.importorskip("torch", reason="the DP-MisGAN examples need torch: pip install torch==2.13.0")
    test_examples_run(page, tmp_path, monkeypatch, with_torch=True)


def test_docs_mark_every_torch_example():
    """A block that uses DPMisGAN must say ``needs=torch``, or the README's test command fails without torch."""
    assert TORCH_PAGES, "no page marks its DP-MisGAN example needs=torch"
    for page in sorted(DOCS.glob("*.md")):
        for lang, attrs, body in blocks(page):
            if (lang == "python" and "DPMisGAN(" in body) or (lang == "console" and "dpmisgan" in body):
                assert attrs.get("needs") == "torch", f"{page.name}: a DPMisGAN example lacks needs=torch"


def test_walkthrough_ends_in_a_publishable_release(tmp_path, monkeypatch):
    test_examples_run(DOCS / "walkthrough.md", tmp_path, monkeypatch)
    import json

    out = json.loads((tmp_path / "release.json").read_text())
    assert out["differentially_private"] is True and len(out["releases"]) == 2
    assert out["releases"][0]["params"]["universe"] == {"AGE": {"low": 16, "high": 99}}
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["confidential"] is True and [p["name"] for p in report["planned"]] == [
        r["name"] for r in out["releases"]]
    assert (tmp_path / "report" / "report.md").read_text().startswith("# dpknn curator's report: CONFIDENTIAL")


def test_cli_reference_names_every_option():
    text = (DOCS / "cli.md").read_text()
    sections = dict(re.findall(r"^## `dpknn ([^`]+)`\n(.*?)(?=^## |\Z)", text, re.S | re.M))

    def commands(parser, prefix=()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from commands(sub, (*prefix, name))
                return
        yield " ".join(prefix), parser

    for name, parser in commands(build_parser()):
        assert name in sections, f"docs/cli.md has no section for dpknn {name}"
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in sections[name], f"docs/cli.md: dpknn {name} lacks {option}"
        # Issue 47, finding 12: every option's row says what it does (no empty cell), and so does --help.
        for row in re.findall(r"^\| `-[^|]*\|([^|]*)\|", sections[name], re.M):
            assert row.strip() and not row.strip().startswith("(default"), f"docs/cli.md: dpknn {name}: empty cell"
        for action in parser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert action.help, f"dpknn {name} {action.option_strings[0]} has no --help text"
