// kernel-runner: on NVIDIA GPUs, HIP source builds with nvcc through this header.
#pragma once
#include "../hip_cuda.h"
