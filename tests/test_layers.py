"""The declared layer order of the package (``ci/architecture.py``, ``LAYERS``; issue 49): no import against
it and no cycle between packages. A negative control plants an upward import in a copy of the tree."""

import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _architecture(root=None):
    spec = importlib.util.spec_from_file_location("architecture", ROOT / "ci" / "architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if root is not None:
        module.ROOT = root
    return module


def test_no_import_against_the_layers_and_no_cycle():
    against, cycles = _architecture().layer_findings()
    assert against == [] and cycles == []


def test_an_upward_import_is_caught(tmp_path):
    tree = tmp_path / "dpknn"
    shutil.copytree(ROOT / "dpknn", tree, ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__", "*.html"))
    schema = tree / "schema" / "_attributes.py"
    late = "\n\ndef _late():\n    from dpknn.releases._queries import PrivateImputation\n    return PrivateImputation\n"
    schema.write_text(schema.read_text() + late)
    (tree / "releases" / "extra.py").write_text("from dpknn.schema._attributes import Schema\n")
    (tree / "schema" / "loop.py").write_text("from dpknn.releases.extra import Schema\n")
    against, cycles = _architecture(tree).layer_findings()
    assert any("schema/_attributes.py" in line and "dpknn.releases._queries" in line for line in against)
    assert cycles == ["releases <-> schema"]


def test_every_architecture_measure_is_within_its_limit(capsys):
    """The whole of ``ci/architecture.py`` (layers, cycles, private reach-ins, long functions, noise outside a
    Mechanism), so that the README's test command catches what CI's last step would."""
    assert _architecture().main() == 0, capsys.readouterr().out
