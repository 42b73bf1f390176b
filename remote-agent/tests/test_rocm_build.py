"""The agent's own ROCm command line, really run: every problem's HIP self-test kernel (a few in both conventions: an
own host launcher, and kernel-only with the generated launcher) built by hipcc for gfx90a, and the library
checked to export the symbol the worker loads. Debian's hipcc (ROCm 5.2) targets gfx90a, not the MI300X's gfx942,
which stays the target on a real ROCm machine (compiler.detect reads it from rocminfo). Skipped without hipcc;
scripts/install-missing installs it for the tests."""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from remote_agent import catalog, compiler, launcher, problem_check  # noqa: E402

KERNELS = os.path.join(ROOT, "selftest", "kernels")
ARCH = "gfx90a"


def variants(slug):
    """(convention, source) for both conventions: the .hip file, its kernel-only twin (``<slug>-kernel.hip`` or
    the kernel-only .cu with HIP's header), and a host-convention form of a kernel-only source."""
    found = {}
    for path in (os.path.join(KERNELS, slug + ".hip"), os.path.join(KERNELS, slug + "-kernel.hip")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                code = f.read()
            found.setdefault(launcher.convention(code), code)
    cuda = os.path.join(KERNELS, slug + ".cu")
    if "kernel" not in found and os.path.isfile(cuda):
        with open(cuda, encoding="utf-8") as f:
            code = f.read()
        if launcher.convention(code) == "kernel":
            found["kernel"] = "#include <hip/hip_runtime.h>\n" + code
    if "host" not in found and "kernel" in found:
        # The user's own launcher: the kernel under another name, launched by an extern "C" solution().
        problem = catalog.load(slug)
        kernel = re.sub(r"__global__(\s+__launch_bounds__\s*\([^)]*\))?\s+void\s+solution\s*\(",
                        lambda m: "__global__" + (m.group(1) or "") + " void kr_user_kernel(", found["kernel"])
        wrapper = launcher.generate(problem, "x").split("\n", 2)[2]  # without the comment and the #include
        wrapper = wrapper.replace(launcher.LAUNCHER_SYMBOL + "(", "solution(").replace("solution<<<",
                                                                                       "kr_user_kernel<<<")
        found["host"] = kernel + "\n" + wrapper
    return found


# Problems built in both conventions; every other one in its own kernel's convention only (the other convention's
# form is made the same way for every problem: a few show it builds, and the catalog's CI time stays in bounds).
BOTH_CONVENTIONS = ("vector-addition", "matrix-multiplication", "softmax", "conv-1d")


def build(toolchain, slug, code):
    """Builds ``code`` for ``slug`` with the agent's command line: (exit code, output, exported symbols, symbol)."""
    assert "--offload-arch=" + ARCH in toolchain.command("hip", "x.cu", "lib.so")
    work = tempfile.mkdtemp(prefix="kr-rocm-")
    try:
        # Its temporary files in the work folder: Debian's hipcc left a folder in /tmp per build (250 a run).
        library, symbol, output = problem_check.build(toolchain, catalog.load(slug), code, "hip", work,
                                                      dict(os.environ, HIP_PLATFORM="amd", TMPDIR=work))
        symbols = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True,
                                 text=True).stdout if library else ""
        return (0 if library else 1), output, symbols, symbol
    finally:
        shutil.rmtree(work, ignore_errors=True)


@unittest.skipUnless(shutil.which("hipcc"), "hipcc is not installed (scripts/install-missing test installs it)")
class RocmBuildTest(unittest.TestCase):
    def test_every_problem_builds_for_gfx90a(self):
        toolchain = compiler.Toolchain("hipcc", shutil.which("hipcc"), "debian-hipcc", ARCH)
        builds = []
        for slug in catalog.slugs():
            forms = variants(slug)
            with open(os.path.join(KERNELS, slug + ".hip"), encoding="utf-8") as f:
                own = launcher.convention(f.read())
            self.assertIn(own, forms, slug)
            if slug in BOTH_CONVENTIONS:
                self.assertEqual({"host", "kernel"}, set(forms), slug)
            builds += [(slug, convention, code) for convention, code in sorted(forms.items())
                       if slug in BOTH_CONVENTIONS or convention == own]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            done = list(pool.map(lambda b: build(toolchain, b[0], b[2]), builds))
        for (slug, convention, _), (code, output, symbols, symbol) in zip(builds, done):
            with self.subTest(problem=slug, convention=convention):
                self.assertEqual(0, code, output)
                self.assertRegex(symbols, r"\sT " + re.escape(symbol) + r"\n", symbols)
        self.assertEqual(len(catalog.slugs()) + len(BOTH_CONVENTIONS), len(builds))


if __name__ == "__main__":
    unittest.main()
