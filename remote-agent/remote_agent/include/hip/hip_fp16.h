// kernel-runner: on NVIDIA GPUs, HIP's __half comes with the HIP-to-CUDA header.
#pragma once
#include "../hip_cuda.h"
