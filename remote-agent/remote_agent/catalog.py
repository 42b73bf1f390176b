"""Problems: ``problems/<slug>/problem.json`` (metadata, also read by the Java service) plus
``problems/<slug>/problem.py`` (cases, PyTorch reference, tolerances, FLOP and byte counts).

Problem modules take ``torch`` as an argument instead of importing it, so the catalog loads (and is
checked) on machines without PyTorch."""
import hashlib
import importlib.util
import json
import os
import re

PROBLEMS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "problems")
C_TYPES = {"float": "float", "int": "int", "size_t": "size_t", "long long": "long long"}
# Buffers of a fixed integer type (an index output, class labels), as PyTorch names them; a "float" buffer is in the
# job's dtype.
INTEGER_BUFFERS = {"long long": "int64"}
SIZE_TYPES = ("int", "size_t")
EXPRESSION = re.compile(r"^[A-Za-z0-9_ +*/()-]+$")
DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2}


class UnknownProblem(KeyError):
    pass


class Problem:
    def __init__(self, slug, meta, module):
        self.slug = slug
        self.meta = meta
        self.module = module

    @property
    def parameters(self):
        return self.meta["parameters"]

    @property
    def dtypes(self):
        return self.meta["dtypes"]

    @property
    def libraries(self):
        """The libraries a solution may link (problem.json "libraries"; none unless it says so)."""
        return tuple(self.meta.get("libraries", ()))

    @property
    def launch(self):
        return self.meta["launch"]

    @property
    def cases(self):
        """[{"test_id", "name", "sizes"}], test ids from 1."""
        return [dict(test_id=i + 1, name=c["name"], sizes=c["sizes"]) for i, c in enumerate(self.module.CASES)]

    def outputs(self):
        return [p["name"] for p in self.parameters if p["pointer"] and not p["const"]]

    def buffer_dtype(self, name, dtype):
        """The PyTorch dtype name of buffer ``name`` in a job of ``dtype``: the job's, or its fixed integer type."""
        kind = next(p["type"] for p in self.parameters if p["name"] == name)
        return INTEGER_BUFFERS.get(kind, dtype)

    def size_names(self):
        return [p["name"] for p in self.parameters if not p["pointer"] and p["type"] in SIZE_TYPES]

    def seed(self, test_id):
        """Inputs are random from a seed derived from problem and test case, and reported."""
        digest = hashlib.sha256((self.slug + ":" + str(test_id)).encode()).hexdigest()
        return int(digest[:8], 16)

    def tolerance(self, sizes, dtype):
        custom = getattr(self.module, "tolerance", None)
        if custom is not None:
            return custom(sizes, dtype)
        tol = self.module.TOLERANCE[dtype]
        return tol["atol"], tol["rtol"]

    def output_init(self):
        return getattr(self.module, "OUTPUT_INIT", float("nan"))

    def flops(self, sizes):
        return self.module.flops(sizes)

    def bytes_moved(self, sizes, dtype):
        return self.module.bytes_moved(sizes, DTYPE_SIZES[dtype])


def _check(slug, meta, module):
    problems = []
    if meta.get("slug") != slug:
        problems.append("slug does not match its folder")
    for p in meta.get("parameters", []):
        if p.get("type") not in C_TYPES:
            problems.append("parameter " + str(p.get("name")) + " has unknown type " + str(p.get("type")))
        elif p.get("type") in INTEGER_BUFFERS and not p.get("pointer"):
            problems.append("parameter " + str(p.get("name")) + ": " + p["type"] + " is for buffers only")
    names = {p["name"] for p in meta.get("parameters", [])}
    launch = meta.get("launch", {})
    if not (set(launch) <= {"elements", "x", "y", "block"}) or not ("elements" in launch or "x" in launch):
        problems.append("launch needs 'elements' or 'x' (and 'y')")
    for key in ("elements", "x", "y"):
        expr = launch.get(key)
        if expr is not None:
            used = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr))
            if not EXPRESSION.match(expr) or not used <= names:
                problems.append("launch." + key + " must be arithmetic on parameter names: " + expr)
    sizes = [p["name"] for p in meta.get("parameters", []) if not p["pointer"] and p["type"] in SIZE_TYPES]
    for case in getattr(module, "CASES", []):
        if set(case["sizes"]) != set(sizes):
            problems.append("case " + case["name"] + " must give exactly the sizes " + str(sizes))
    from remote_agent.compiler import LIBRARIES  # noqa: here, so that the catalog needs nothing else at import
    for library in meta.get("libraries", []):
        if library not in LIBRARIES:
            problems.append("unknown library " + str(library) + " (known: " + ", ".join(sorted(LIBRARIES)) + ")")
    for dtype in meta.get("dtypes", []):
        if dtype not in DTYPE_SIZES:
            problems.append("unknown dtype " + dtype)
        elif getattr(module, "tolerance", None) is None and dtype not in getattr(module, "TOLERANCE", {}):
            problems.append("no tolerance for " + dtype)
    for fn in ("make_inputs", "reference", "flops", "bytes_moved"):
        if not callable(getattr(module, fn, None)):
            problems.append("problem.py lacks " + fn + "()")
    if not getattr(module, "CASES", None):
        problems.append("problem.py has no CASES")
    if problems:
        raise ValueError(slug + ": " + "; ".join(problems))


def load(slug, root=PROBLEMS_DIR):
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", slug or ""):
        raise UnknownProblem(slug)
    folder = os.path.join(root, slug)
    meta_path = os.path.join(folder, "problem.json")
    module_path = os.path.join(folder, "problem.py")
    if not (os.path.isfile(meta_path) and os.path.isfile(module_path)):
        raise UnknownProblem(slug)
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    spec = importlib.util.spec_from_file_location("kr_problem_" + slug.replace("-", "_"), module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _check(slug, meta, module)
    return Problem(slug, meta, module)


def slugs(root=PROBLEMS_DIR):
    return sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "problem.json")))
