"""Architecture checks of the package layout (issue 30's measures); exit 1 when a limit is exceeded.

Counts, over the library code under ``dpknn/`` (tests and benchmarks excluded):
- top-level modules and packages of ``dpknn/``;
- ``from dpknn.x import _y`` (or a relative import of a private name) across top-level packages;
- ``obj._private`` attribute reads on objects other than ``self``/``cls`` of a private name that the
  module does not define itself;
- ``metrics/`` files importing ``synth/``, and library code importing ``cli`` or ``experiments``;
- functions longer than 80 lines, not counting their docstring (a complete numpydoc section is not code);
- calls of the noise samplers outside ``dpknn/mechanisms/_noise.py`` and ``dpknn/mechanisms/_base.py``;
- imports against the declared layer order (``LAYERS``, issue 49): a package imports only from its own
  layer's packages or from lower layers, at module level or inside a function, and the package-level
  import graph has no cycle. Deprecated import paths (modules whose docstring starts "Deprecated path")
  are exempt: they forward old names to where they moved. ``tests/test_layers.py`` runs this check.

Usage: python ci/architecture.py [--report]   (--report prints every finding)
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "dpknn"
SAMPLERS = {"discrete_laplace", "discrete_gaussian", "rounded_generalized_cauchy", "rounded_polyplace",
            "bernoulli_real", "bernoulli_exp_exact"}
NOISE_HOME = "mechanisms"
#: The layer order, lowest first. A package may import its own layer's packages and lower layers only.
LAYERS = (
    ("_core", "exceptions", "utils"),
    ("schema", "accounting"),
    ("mechanisms", "datasets", "metrics"),
    ("impute", "processing", "sdc", "models", "synth"),
    ("releases",),
    ("experiments",),
    ("cli", "__main__"),
)
LIMITS = {"imports against the layers": 0, "package import cycles": 0,
          "top-level entries": 16, "private imports across packages": 0, "private attribute reach-ins": 3,
          "metrics importing synth": 0, "library importing cli/experiments": 0, "functions over 80 lines": 2,
          "noise drawn outside a Mechanism": 0}


def top(path):
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def resolve(path, node):
    """The absolute dotted module of an ImportFrom node in ``path``."""
    if node.level == 0:
        return node.module or ""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    base = parts[:-node.level] if path.name != "__init__.py" else parts[:len(parts) - node.level]
    if path.name == "__init__.py":
        base = parts[:-1][:len(parts) - node.level]
    return ".".join(base + ([node.module] if node.module else []))


def _calls_by_class(tree, cls=None):
    """(enclosing class name or None, Call node) for every call in ``tree``."""
    for child in ast.iter_child_nodes(tree):
        inner = child.name if isinstance(child, ast.ClassDef) else cls
        if isinstance(child, ast.Call):
            yield cls, child
        yield from _calls_by_class(child, inner)


def _imported(tree):
    """(line, dpknn module) of every absolute import of the package in ``tree``, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("dpknn."):
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dpknn."):
                    yield node.lineno, alias.name


def layer_findings():
    """(imports against the layer order, package-level cycles) as lists of readable lines."""
    level = {p: i for i, ps in enumerate(LAYERS) for p in ps}
    against, edges = [], {}
    for path in sorted(ROOT.rglob("*.py")):
        here = top(path)
        if here == "__init__" or (ast.get_docstring(ast.parse(path.read_text())) or "").startswith("Deprecated path"):
            continue
        if here not in level:
            against.append(f"{path.relative_to(ROOT)}: package {here!r} has no place in LAYERS")
            continue
        for line, module in _imported(ast.parse(path.read_text())):
            target = module.split(".")[1]
            if target == here:
                continue
            edges.setdefault(here, set()).add(target)
            if level.get(target, len(LAYERS)) > level[here]:
                against.append(f"{path.relative_to(ROOT)}:{line}: {here} (layer {level[here]}) imports {module} "
                               f"(layer {level.get(target)})")
    cycles = []
    for a, targets in edges.items():
        for b in targets:
            if a < b and a in edges.get(b, ()):
                cycles.append(f"{a} <-> {b}")
    return against, cycles


def main(report=False):
    files = sorted(p for p in ROOT.rglob("*.py") if "_core" not in p.parts or p.suffix == ".py")
    entries = sorted(p.name for p in ROOT.iterdir() if not p.name.startswith("__") and (
        p.suffix in (".py", "") and (p.is_dir() or p.suffix == ".py")) and p.name != "__pycache__")
    findings = {k: [] for k in LIMITS}
    findings["top-level entries"] = entries
    findings["imports against the layers"], findings["package import cycles"] = layer_findings()
    for path in files:
        tree = ast.parse(path.read_text())
        defined = {n.name for n in ast.walk(tree)
                   if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
        defined |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Name)}
        defined |= {t.attr for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Attribute)}
        here = top(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = resolve(path, node)
                parts = module.split(".")
                target = parts[1] if len(parts) > 1 and parts[0] == "dpknn" else None
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__") and target not in (None, here) \
                            and target != "_core":
                        findings["private imports across packages"].append(
                            f"{path.relative_to(ROOT)}: {module}.{alias.name}")
                if here == "metrics" and target == "synth":
                    findings["metrics importing synth"].append(f"{path.relative_to(ROOT)}: {module}")
                if target in ("cli", "experiments") and here not in ("cli", "experiments", "__main__"):
                    findings["library importing cli/experiments"].append(f"{path.relative_to(ROOT)}: {module}")
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Name) and base.id in ("self", "cls", "super"):
                    continue
                if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super":
                    continue
                if isinstance(base, ast.Name) and base.id in ("np", "math", "os", "sys", "pd"):
                    continue
                if node.attr in defined:
                    continue
                findings["private attribute reach-ins"].append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                first = node.body[0]
                if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                        and isinstance(first.value.value, str)):
                    length -= first.end_lineno - first.lineno + 1
                if length > 80:
                    findings["functions over 80 lines"].append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name} "
                                                               f"({length} lines)")

    # Sampler calls are fine inside a Mechanism subclass (or in noise.py / mechanisms.py).
    bases = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
    mechanisms = {"Mechanism"}
    while True:
        more = {c for c, b in bases.items() if b & mechanisms} - mechanisms
        if not more:
            break
        mechanisms |= more
    findings["noise drawn outside a Mechanism"] = [
        f for f in findings["noise drawn outside a Mechanism"] if f.split(" in ")[-1] not in mechanisms]
    for path in files:
        if top(path) == NOISE_HOME:
            continue
        for cls, node in _calls_by_class(ast.parse(path.read_text())):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in SAMPLERS and cls not in mechanisms:
                findings["noise drawn outside a Mechanism"].append(f"{path.relative_to(ROOT)}:{node.lineno}: {name} "
                                                                   f"in {cls}")
    failed = False
    for key, limit in LIMITS.items():
        count = len(findings[key])
        bad = count > limit
        failed |= bad
        print(f"{'FAIL' if bad else 'ok  '} {key}: {count} (limit {limit})")
        if report or bad:
            for f in findings[key]:
                print(f"       {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main("--report" in sys.argv))
