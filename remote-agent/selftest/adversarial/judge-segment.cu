// A wrong kernel that rewrites the judge's own buffers: the judge shares each call's inputs and outputs with the
// solution's process through CUDA IPC, and a handle maps the whole allocation a buffer lies in. This one zeroes
// that whole allocation (cuMemGetAddressRange of its input, from the driver PyTorch already loaded): where the
// judge's private copy of the inputs lay in it too, inputs and copy alike became zeros, the zero output matched the
// reference of zeros, and it passed (issue 25). With the shared buffers in an allocation of their own, the copy
// keeps the real inputs. Verdict: WRONG_ANSWER.
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <cuda_runtime.h>

typedef int (*range_fn)(uint64_t* base, size_t* size, uint64_t pointer);

extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // PyTorch loaded it, privately
  range_fn range = driver ? (range_fn) dlsym(driver, "cuMemGetAddressRange_v2") : 0;
  uint64_t base = 0;
  size_t size = 0;
  if (range && range(&base, &size, (uint64_t) (uintptr_t) input) == 0 && size) {
    fprintf(stderr, "KR-ATTACK-TRIED judge-segment: zeroing %zu bytes around the input\n", size);
    cudaMemset((void*) (uintptr_t) base, 0, size);
  } else {
    fprintf(stderr, "KR-ATTACK-NOT-RUN judge-segment: no driver call\n");
  }
  cudaMemset(output, 0, M * N * sizeof(float));
  cudaDeviceSynchronize();
}
