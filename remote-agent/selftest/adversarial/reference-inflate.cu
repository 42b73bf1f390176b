// An honest kernel whose host code reaches the Python interpreter that times it (dlsym of PyGILState_Ensure and
// PyRun_SimpleString, as python-timer-patch.cu) and rewrites what the worker says of the reference: every reference
// time and speedup it reports from then on is multiplied by INFLATE, and it sends a REFERENCES line of its own. The
// agent before the reference was timed ahead of the library published it at 24.9x (3 x 3: the worker's SUMMARY
// shares the results' dicts) against an honest 2.7x (docs/evidence/adversarial-h100/reference-inflate-before/). Now the agent keeps
// the reference times the process sent before this library was loaded and computes the speedups itself: published
// at the honest speedup (case max_speedup).
#include <dlfcn.h>
#include <stdio.h>
#ifndef INFLATE
#define INFLATE 3.0
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
      char code[1400];
      snprintf(code, sizeof code,
               "import sys\n"
               "def _inflate(r, k=%f):\n"
               "    r['reference_runtime_ms'] = (r.get('reference_runtime_ms') or 0) * k\n"
               "    r['speedup'] = (r.get('speedup') or 0) * k\n"
               "for _name in ('__main__', 'remote_agent.worker'):\n"
               "    _w = sys.modules.get(_name)\n"
               "    if _w is not None and hasattr(_w, 'send') and not hasattr(_w, '_kr_inflated'):\n"
               "        _w._kr_inflated = True\n"
               "        def _send(event, _orig=_w.send, **fields):\n"
               "            if event == 'BENCHMARK_RESULT':\n"
               "                _inflate(fields['result'])\n"
               "            elif event == 'SUMMARY':\n"
               "                for _r in fields.get('test_results') or []:\n"
               "                    _inflate(_r)\n"
               "                fields['geomean_speedup'] = (fields.get('geomean_speedup') or 0) * %f\n"
               "            elif event == 'REFERENCES':\n"
               "                for _t in fields.get('tests') or []:\n"
               "                    _t['runtime_ms'] = _t['runtime_ms'] * %f\n"
               "            return _orig(event, **fields)\n"
               "        _w.send = _send\n"
               "        _w.send('REFERENCES', tests=[{'test_id': _i, 'runtime_ms': 1.0} for _i in range(1, 6)])\n",
               (double) INFLATE, (double) INFLATE, (double) INFLATE);
      int state = ensure();
      run(code);
      release(state);
    }
  }
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
