"""One self-test case as a ready call: the compiled library's entry with the case's inputs (from the problem's own
seed) and fresh outputs. Shared by the do_bench comparison and the Nsight Compute launcher."""
from remote_agent.worker import load_solution as entry  # noqa: F401 (the worker's own typing of the call)


def case_args(problem, case, torch):
    """The arguments of one call for ``case`` (float32 inputs), keeping the tensors alive in the returned list."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(problem.seed(case["test_id"]))
    inputs = problem.module.make_inputs(case["sizes"], torch.float32, gen, torch)
    ref = problem.module.reference(inputs, torch)
    outputs = {n: torch.empty_like(ref[n]) for n in problem.outputs()}
    args = []
    for p in problem.parameters:
        if p["pointer"]:
            args.append((outputs[p["name"]] if p["name"] in outputs else inputs[p["name"]]).data_ptr())
        else:
            args.append(case["sizes"].get(p["name"], inputs.get(p["name"])))
    return args, (inputs, outputs)
