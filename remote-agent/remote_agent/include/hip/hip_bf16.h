// kernel-runner: on NVIDIA GPUs, HIP's __hip_bfloat16 comes with the HIP-to-CUDA header.
#pragma once
#include "../hip_cuda.h"
