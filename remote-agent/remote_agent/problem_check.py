"""The catalog's validator: ``python3 -m remote_agent problems check [SLUG ...] [--json FILE] [--no-gpu]``.

Per problem, without a GPU (CI runs this part for every problem): its metadata loads and agrees with problem.py
(catalog._check), it has a level, tags and, if taken from KernelBench, the attribution and notice; its known-correct
kernels (``selftest/kernels/<slug>.cu``, and ``.hip``) exist and compile with nvcc for sm_90 (the HIP one through
the agent's HIP-to-CUDA header, as HIP is built on NVIDIA), all of a language in one nvcc run.

On a GPU (PyTorch), per test case of at least ``MIN_ELEMENTS`` output values, the float32 tolerance must:
pass the reference computed in float32; fail the reference computed in float16, on inputs rounded to TF32 where the
problem is a matrix product or a convolution (what TF32 tensor cores multiply), all-zeros, a copy of any input shaped like an output, and the reference of a
neighbouring size (each size one smaller, its output cut or NaN-padded to the right length: what an off-by-one
kernel or a cached answer of another case leaves). And each known kernel (CUDA, and HIP through the header), built
as the agent builds it, must pass every case through the same Harness the judge checks with, twice on fresh inputs.
A problem that rejects its own kernel or accepts an attack fails. The output for the whole catalog on the H100 is
docs/evidence/catalog-h100/validator-*."""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass

from remote_agent import catalog, compiler, launcher

KERNELS = os.path.join(os.path.dirname(catalog.PROBLEMS_DIR), "selftest", "kernels")
MIN_ELEMENTS = 100  # a single value can happen to be exact in float16; a hundred cannot all be
TF32_TAGS = ("matmul", "convolution")
NOTICE = "Copyright (c) 2023 Anne Ouyang, Simon Guo, Azalia Mirhoseini"


@dataclass
class Finding:
    """One check of one problem: ``passed`` says whether the problem behaved as it must."""
    problem: str
    check: str
    passed: bool
    case: str = None
    detail: str = ""


def known_kernels(slug):
    """{language: source} of the problem's known-correct kernels."""
    found = {}
    for language, suffix in (("cuda", ".cu"), ("hip", ".hip")):
        path = os.path.join(KERNELS, slug + suffix)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                found[language] = f.read()
    return found


def metadata(slug, root=catalog.PROBLEMS_DIR):
    """The checks of problem.json and problem.py that need nothing but Python."""
    try:
        problem = catalog.load(slug, root)
    except (ValueError, KeyError, TypeError, SyntaxError, catalog.UnknownProblem) as e:
        return [Finding(slug, "loads", False, detail=str(e)[:500])]
    meta = problem.meta
    found = [Finding(slug, "loads", True),
             Finding(slug, "level and tags", meta.get("level") in (1, 2, 3) and bool(meta.get("tags"))
                     and all(isinstance(t, str) for t in meta["tags"]))]
    source = meta.get("attribution")
    if source is not None:
        notice = os.path.join(root, slug, str(source.get("notice")))
        text = open(notice, encoding="utf-8").read() if os.path.isfile(notice) else ""
        found.append(Finding(slug, "attribution", "KernelBench" in str(source.get("source"))
                             and source.get("license") == "MIT" and NOTICE in text,
                             detail=str(source.get("source"))))
    kernels = known_kernels(slug)
    found.append(Finding(slug, "known kernels", set(kernels) == {"cuda", "hip"}, detail=", ".join(sorted(kernels))))
    return found


def _unit(slug, code, language, toolchain):
    """The known kernel as the agent builds it (the launcher it generates where the kernel is kernel-only), its
    exported solution renamed after the problem and its includes apart: (includes, body)."""
    from remote_agent.agent import build_plan  # noqa: the agent module is heavy; only builds need it
    sources, _, _, _ = build_plan(code, language, catalog.load(slug), toolchain)
    text = "\n".join(sources[name] for name in sorted(sources, key=lambda n: (n != "solution.cu", n)))
    text = re.sub(r'#include\s+"solution\.cu"\s*\n', "", text)
    tag = slug.replace("-", "_")
    includes = [line for line in text.splitlines() if line.startswith("#include")]
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#include"))
    body = re.sub(r"\b(%s|%s)\b" % (launcher.HOST_SYMBOL, launcher.LAUNCHER_SYMBOL), lambda m: m.group(1) + "_" + tag,
                  body)
    return includes, "namespace kr_%s {\n%s\n}\n" % (tag, body)


def compile_all(slugs, nvcc=None):
    """Every problem's known kernels compiled by nvcc (sm_90), one run per language; where one fails, each is built
    alone to name it. Findings per problem and language."""
    nvcc = nvcc or compiler.find_nvcc()
    if nvcc is None:
        return []
    toolchain = compiler.Toolchain("nvcc", nvcc, "validator", "sm_90")
    findings = []
    work = tempfile.mkdtemp(prefix="kr-check-")
    try:
        for language in ("cuda", "hip"):
            units = {}
            for slug in slugs:
                code = known_kernels(slug).get(language)
                if code is not None:
                    try:
                        units[slug] = _unit(slug, code, language, toolchain)
                    except Exception as e:  # noqa: a kernel the agent cannot plan is this problem's failure
                        findings.append(Finding(slug, "compiles (%s)" % language, False, detail=str(e)[:300]))
            error = _nvcc(nvcc, work, language, units.values())
            for slug, unit in units.items():
                alone = _nvcc(nvcc, work, language + "-" + slug, [unit]) if error else None
                findings.append(Finding(slug, "compiles (%s)" % language, alone is None, detail=(alone or "")[-1500:]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return findings


def _nvcc(nvcc, work, name, units):
    """None when the units compile together, else nvcc's output."""
    units = list(units)
    includes = sorted({line for unit in units for line in unit[0]})
    source = os.path.join(work, name + ".cu")
    with open(source, "w", encoding="utf-8") as f:
        f.write("\n".join(includes) + "\n" + "".join(unit[1] for unit in units))
    hip = ["-include", os.path.join(compiler.INCLUDE_DIR, "hip_cuda.h")] if name.startswith("hip") else []
    done = subprocess.run([nvcc, "-c", "-std=c++17", "-arch=sm_90", "-I", compiler.INCLUDE_DIR, *hip, "-o",
                           source + ".o", "-x", "cu", source], capture_output=True, text=True, timeout=900)
    return None if done.returncode == 0 else done.stdout + done.stderr


# ---- on a GPU

def mismatches(problem, case, got, want):
    """How many output values are outside the float32 tolerance (a missing or misshapen output: all of them)."""
    from remote_agent.worker import outside  # noqa: the judge's own rule, imported where a GPU is used
    atol, rtol = problem.tolerance(case["sizes"], "float32")
    bad = 0
    for name in problem.outputs():
        value = got.get(name)
        if value is None or value.numel() != want[name].numel():
            bad += want[name].numel()
            continue
        bad += int(outside(value, want[name], atol, rtol).sum().item())
    return bad


def _inputs(problem, sizes, torch, seed):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    return problem.module.make_inputs(sizes, torch.float32, gen, torch)


def _wide(inputs, torch):
    return {k: (v.double() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in inputs.items()}


def _fit(value, like, torch):
    """``value`` flattened to ``like``'s length: cut, or padded with NaN (an output a kernel left unwritten)."""
    flat = value.double().reshape(-1)[:like.numel()]
    pad = torch.full((like.numel() - flat.numel(),), float("nan"), dtype=torch.float64, device=flat.device)
    return torch.cat([flat, pad]).reshape(like.shape)


def _tf32(value, torch):
    """A float32 tensor with TF32's precision (10 mantissa bits, rounded to nearest): what a kernel on TF32 tensor
    cores multiplies, whichever way PyTorch would compute the reference."""
    if not (torch.is_tensor(value) and value.dtype == torch.float32):
        return value
    return ((value.view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)


def attacks(slug, torch):
    """The tolerance's calibration on every case of at least MIN_ELEMENTS output values (PyTorch's own TF32 paths
    off: the float32 reference is float32 throughout)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        return _attacks(slug, torch)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _attacks(slug, torch):
    problem = catalog.load(slug)
    if "float32" not in problem.dtypes:
        return []
    tf32 = any(tag in TF32_TAGS for tag in problem.meta.get("tags", []))
    results = []  # (check, must pass, passed, case name, small, detail)
    for case in problem.cases:
        seed = problem.seed(case["test_id"])
        inputs = _inputs(problem, case["sizes"], torch, seed)
        want = problem.module.reference(_wide(inputs, torch), torch)
        total = sum(v.numel() for v in want.values())

        def expect(check, passes, got):
            count = mismatches(problem, case, got, want)
            results.append((check, passes, count == 0, case["name"], total < MIN_ELEMENTS,
                            "%d of %d values outside the tolerance" % (count, total)))
        expect("float32 passes", True, problem.module.reference(inputs, torch))
        half = {k: (v.half() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in inputs.items()}
        expect("float16 fails", False, problem.module.reference(half, torch))
        if tf32:
            expect("TF32 fails", False, problem.module.reference({k: _tf32(v, torch) for k, v in inputs.items()}, torch))
        expect("zeros fail", False, {name: torch.zeros_like(want[name]) for name in problem.outputs()})
        for name, value in inputs.items():  # (a copy of one value is often the answer: a sum or maximum of one)
            if total > 1 and torch.is_tensor(value) and all(value.shape == want[o].shape for o in problem.outputs()):
                expect("a copy of " + name + " fails", False, {o: value.clone() for o in problem.outputs()})
        for size, value in case["sizes"].items():
            if value > 1:
                smaller = dict(case["sizes"], **{size: value - 1})
                try:
                    other = problem.module.reference(_wide(_inputs(problem, smaller, torch, seed), torch), torch)
                except (RuntimeError, ValueError):
                    continue  # no such problem at that size (a size that must divide another)
                expect("%s - 1 fails" % size, False, {o: _fit(other[o], want[o], torch) for o in problem.outputs()})
        del inputs, want
    return _judged(slug, results)


def _judged(slug, results):
    """The findings of a problem's attack results. Per case, on cases of at least MIN_ELEMENTS values (a single
    value can be exact by chance); where every case is smaller (a loss: one value), over the cases: an attack must
    fail in some case, float32 pass in every one. An answer for a size one smaller must fail in some case either way:
    it can be right for one (the maximum over 65537 values is most often the maximum over the first 65536), not for
    a kernel that loops one short in every case."""
    small_only = all(small for _, _, _, _, small, _ in results)
    findings, pooled = [], {}
    for check, passes, passed, case, small, detail in results:
        if check.endswith(" - 1 fails") or (small_only and not passes):
            pooled.setdefault(check, []).append((passed, case + ": " + detail))
        elif small_only or not small:
            findings.append(Finding(slug, check, passed == passes, case, detail))
    for check, outcomes in sorted(pooled.items()):
        findings.append(Finding(slug, check, not all(passed for passed, _ in outcomes), None,
                                "; ".join(detail for _, detail in outcomes)))
    return findings


def build(toolchain, problem, code, language, folder, env=None):
    """``code`` built in ``folder`` (made here) as the agent builds it for ``language`` (``env``: the compiler's
    environment, this process's by default): (the library's path or None, its exported symbol, the compiler's
    output)."""
    from remote_agent.agent import build_plan  # noqa: the agent module is heavy; only builds need it
    sources, entry, symbol, _ = build_plan(code, language, problem, toolchain)
    os.makedirs(folder, exist_ok=True)
    for name, text in sources.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    done = subprocess.run(toolchain.command(language, entry, "lib.so", problem.libraries), cwd=folder,
                          capture_output=True, text=True, timeout=600, env=env)
    return (os.path.join(folder, "lib.so") if done.returncode == 0 else None), symbol, done.stdout + done.stderr


def build_known(slug, toolchain, work):
    """Each known kernel of ``slug`` built in ``work``: {language: (library, symbol) or the compiler's output}."""
    problem = catalog.load(slug)
    built = {}
    for language, code in sorted(known_kernels(slug).items()):
        library, symbol, output = build(toolchain, problem, code, language, os.path.join(work, slug + "-" + language))
        built[language] = (library, symbol) if library else output[-1500:]
    return built


def known_kernels_pass(slug, torch, built, rounds=2):
    """Each known kernel (``built``: build_known's) called on every case through the judge's Harness, ``rounds``
    times on fresh inputs."""
    from remote_agent import worker  # noqa: heavy imports only where a GPU is used
    findings = []
    problem = catalog.load(slug)
    for language, made in sorted(built.items()):
        if isinstance(made, str):
            findings.append(Finding(slug, "known %s kernel builds" % language, False, detail=made))
            continue
        fn = worker.load_solution(made[0], made[1], problem)
        harness = worker.Harness({"problem": slug, "dtype": problem.dtypes[0]}, torch)
        for case in problem.cases:
            debug = None
            for _ in range(rounds):
                data = harness.input_set(case)
                fn(*data.args)
                torch.cuda.synchronize()
                debug = harness.verify(case, data)
                del data
                if debug:
                    break
            findings.append(Finding(slug, "known %s kernel passes" % language, debug is None, case["name"],
                                    json.dumps(debug, default=str)[:500] if debug else ""))
    return findings


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(prog="python3 -m remote_agent problems check")
    parser.add_argument("slugs", nargs="*", help="problems to check (default: the whole catalog)")
    parser.add_argument("--json", help="write every finding to this file")
    parser.add_argument("--no-gpu", action="store_true", help="only what needs no GPU (CI)")
    args = parser.parse_args(argv)
    slugs = args.slugs or catalog.slugs()
    began = time.monotonic()
    findings = [f for slug in slugs for f in metadata(slug)]
    findings += compile_all(slugs)
    gpu = None
    if not args.no_gpu:
        import torch
        if not torch.cuda.is_available():
            print("problems check: no GPU visible to PyTorch (use --no-gpu for the checks that need none)")
            return 2
        gpu = torch.cuda.get_device_name()
        toolchain = compiler.detect("cuda")
        work = tempfile.mkdtemp(prefix="kr-check-")
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
                builds = dict(zip(slugs, pool.map(lambda slug: build_known(slug, toolchain, work), slugs)))
            for slug in slugs:
                try:
                    findings += attacks(slug, torch) + known_kernels_pass(slug, torch, builds[slug])
                except Exception as e:  # noqa: a problem whose reference or inputs fail is this problem's failure
                    findings.append(Finding(slug, "runs on the GPU", False, detail=traceback.format_exc()[-1500:]))
                torch.cuda.empty_cache()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    failed = sorted({f.problem for f in findings if not f.passed})
    for slug in slugs:
        mine = [f for f in findings if f.problem == slug]
        bad = [f for f in mine if not f.passed]
        print("%s %s: %d checks%s" % ("FAIL" if bad else "ok  ", slug, len(mine), "".join(
            "\n    %s%s: %s" % (f.check, " (" + f.case + ")" if f.case else "", f.detail) for f in bad)))
    print("%d problems, %d checks, %d problems failed%s, %.0f s%s" % (
        len(slugs), len(findings), len(failed), (": " + ", ".join(failed)) if failed else "",
        time.monotonic() - began, " on " + gpu if gpu else " (no GPU)"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"gpu": gpu, "failed": failed, "findings": [asdict(x) for x in findings]}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
