// An honest kernel whose host code reaches the Python interpreter that times it (dlsym of PyGILState_Ensure and
// PyRun_SimpleString), scales every CUDA event time by SCALE and switches off the agent's device-span guard (which
// otherwise notices that the device was busy longer than the events say, and publishes the device's own times).
// Before issue 14 it was published at 0.64x its real time; until issue 26 it met a profiler's cross-check. Verdict
// now: BENCHMARKED at the honest kernel's time, with SCALE 0.64, 0.85 (case python-timer-patch-085x) or 0.01
// (case python-timer-patch-100x): the ranked time comes from the replay, a process its host code never ran in, so
// the patch changes no figure that counts.
#include <dlfcn.h>
#include <stdio.h>
#ifndef SCALE
#define SCALE 0.64
#endif
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int patched = 0;
  if (!patched) {
    patched = 1;
    typedef int (*ensure_t)(void);
    typedef void (*release_t)(int);
    typedef int (*run_t)(const char*);
    ensure_t ensure = (ensure_t) dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    release_t release = (release_t) dlsym(RTLD_DEFAULT, "PyGILState_Release");
    run_t run = (run_t) dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
    if (ensure && release && run) {
      char code[640];
      snprintf(code, sizeof code,
               "import sys, torch\n_orig = torch.cuda.Event.elapsed_time\n"
               "torch.cuda.Event.elapsed_time = lambda self, end: _orig(self, end) * %f\n"
               "for _name in ('__main__', 'remote_agent.worker'):\n"
               "    _w = sys.modules.get(_name)\n"
               "    if _w is not None and hasattr(_w, 'Runner'):\n"
               "        _w.Runner.device_span = _w.Runner.device_spans = lambda self, *a, **k: None\n",
               (double) SCALE);
      int state = ensure();
      run(code);
      release(state);
    }
  }
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
